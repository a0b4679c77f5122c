/**
 * The chat simulator's single page: plain HTML, CSS and JS, no build step. Talks to the simulator server through
 * `GET /sim/config`, `POST /sim/say|poke|recall` and the server-sent event stream `GET /sim/feed` (entries, and
 * `thinking` events while an episode runs). Everything people type is put into the DOM with `textContent`, never
 * as HTML.
 */
export const SIMULATOR_PAGE = `<!doctype html>
<html lang="zh-CN">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>qunli 群聊模拟器 · chat simulator</title>
<style>
  :root { --bg: #f3f4f6; --panel: #fff; --line: #e5e7eb; --me: #95ec69; --bot: #fff; --muted: #6b7280; --accent: #2563eb; }
  * { box-sizing: border-box; }
  body { margin: 0; font: 14px/1.5 system-ui, -apple-system, "PingFang SC", "Microsoft YaHei", sans-serif; background: var(--bg); color: #111827; height: 100vh; display: flex; }
  aside { width: 250px; background: #1f2937; color: #e5e7eb; display: flex; flex-direction: column; }
  aside h1 { font-size: 16px; margin: 0; padding: 14px 16px; border-bottom: 1px solid #374151; }
  aside h1 small { display: block; font-weight: normal; color: #9ca3af; font-size: 12px; }
  #chats { flex: 1; overflow-y: auto; list-style: none; margin: 0; padding: 0; }
  #chats li { padding: 10px 16px; cursor: pointer; border-bottom: 1px solid #374151; }
  #chats li.active { background: #374151; }
  #chats li .unread { float: right; background: #ef4444; color: #fff; border-radius: 9px; padding: 0 6px; font-size: 12px; }
  #chats li .think { color: #fbbf24; font-size: 12px; margin-left: 6px; }
  .newchat { padding: 8px 16px; display: flex; gap: 6px; border-top: 1px solid #374151; }
  .newchat input { flex: 1; min-width: 0; }
  main { flex: 1; display: flex; flex-direction: column; min-width: 0; }
  header { background: var(--panel); border-bottom: 1px solid var(--line); padding: 10px 16px; display: flex; align-items: center; gap: 12px; }
  header .title { font-weight: 600; }
  header .thinking { color: #b45309; font-size: 12px; }
  header .badge { background: #fef3c7; color: #92400e; border: 1px solid #fcd34d; border-radius: 10px; padding: 0 8px; font-size: 12px; }
  header .status { margin-left: auto; color: var(--muted); font-size: 12px; }
  #log { flex: 1; overflow-y: auto; padding: 16px; }
  .msg { display: flex; flex-direction: column; margin: 8px 0; max-width: 70%; }
  .msg .who { font-size: 12px; color: var(--muted); }
  .msg .who button { border: 0; background: none; color: var(--accent); cursor: pointer; font-size: 12px; padding: 0 0 0 6px; }
  .msg .bubble { padding: 8px 12px; border-radius: 8px; white-space: pre-wrap; word-break: break-word; background: var(--bot); border: 1px solid var(--line); }
  .msg .bubble.forward { border-style: dashed; }
  .msg.user { margin-left: auto; align-items: flex-end; }
  .msg.user .bubble { background: var(--me); border-color: #7dd35a; }
  .msg.bot .bubble { border-left: 3px solid var(--accent); }
  .msg.recalled .bubble { opacity: .45; text-decoration: line-through; }
  .msg .quote { font-size: 12px; color: var(--muted); margin-bottom: 2px; }
  .msg .why { font-size: 11px; color: var(--muted); margin-top: 2px; max-width: 100%; }
  .msg .why.deliberate { color: var(--accent); }
  .notice { text-align: center; color: var(--muted); font-size: 12px; margin: 8px 0; }
  .notice.error { color: #b91c1c; }
  form { background: var(--panel); border-top: 1px solid var(--line); padding: 10px 16px; display: grid; grid-template-columns: auto auto auto auto auto 1fr auto; gap: 8px; align-items: center; }
  form label { font-size: 12px; color: var(--muted); display: flex; flex-direction: column; }
  form textarea { grid-column: 1 / 7; resize: vertical; min-height: 44px; font: inherit; padding: 6px 8px; }
  form .send { grid-column: 7; grid-row: 2; height: 44px; padding: 0 18px; background: var(--accent); color: #fff; border: 0; border-radius: 6px; font: inherit; cursor: pointer; }
  form .send:disabled { opacity: .5; }
  form .small { height: 28px; font-size: 12px; }
  #quoting { grid-column: 1 / 8; font-size: 12px; color: var(--muted); display: none; }
  #quoting button { font-size: 12px; }
  input { font: inherit; padding: 4px 6px; border: 1px solid var(--line); border-radius: 4px; }
  .check { flex-direction: row !important; align-items: center; gap: 4px; color: #111827 !important; font-size: 14px !important; }
</style>
</head>
<body>
<aside>
  <h1>qunli 群聊模拟器<small>chat simulator · OneBot v11</small></h1>
  <ul id="chats"></ul>
  <div class="newchat"><input id="newGroup" placeholder="群号 group id" inputmode="numeric"><button type="button" id="addGroup">加入群</button></div>
  <div class="newchat"><input id="newPrivate" placeholder="私聊 QQ 号 user id" inputmode="numeric"><button type="button" id="addPrivate">私聊</button></div>
</aside>
<main>
  <header><span class="title" id="chatTitle">选择一个聊天 · pick a chat</span><span class="thinking" id="thinking"></span><span class="badge" id="offline" hidden>离线模式 · offline</span><span class="status" id="status">连接中 connecting…</span></header>
  <div id="log"></div>
  <form id="say" autocomplete="off">
    <div id="quoting"><span id="quotingText"></span> <button type="button" id="unquote">取消引用</button></div>
    <label>QQ 号 user id<input id="userId" required inputmode="numeric" size="10"></label>
    <label>昵称 nickname<input id="nickname" required size="10"></label>
    <button type="button" class="small" id="switchUser" title="换一个人说话 · speak as another user">换人</button>
    <label class="check"><input type="checkbox" id="atSelf"> <span id="atLabel">@机器人</span></label>
    <label class="check"><input type="checkbox" id="asForward"> 合并转发 forward</label>
    <button type="button" class="small" id="poke">戳一戳 poke</button>
    <textarea id="text" placeholder="输入消息，Enter 发送，Shift+Enter 换行 · type a message, Enter to send"></textarea>
    <button class="send" id="send">发送 send</button>
  </form>
</main>
<script>
(() => {
  const $ = (id) => document.getElementById(id);
  const PEOPLE = [{ userId: '20001', nickname: 'Alice' }, { userId: '20002', nickname: 'Bob' }];
  const state = { config: null, entries: [], chats: new Map(), current: null, unread: new Map(), thinking: new Map(), quote: null };
  const stored = JSON.parse(localStorage.getItem('qunli-sim') || '{}');
  $('userId').value = stored.userId || PEOPLE[0].userId;
  $('nickname').value = stored.nickname || PEOPLE[0].nickname;
  $('atSelf').checked = stored.atSelf !== false;

  function chatKey(entry) { return entry.groupId ? 'g:' + entry.groupId : 'p:' + entry.userId; }
  function chatLabel(key) { return key.startsWith('g:') ? '群 ' + key.slice(2) : '私聊 ' + key.slice(2); }
  function botName() { return state.config ? state.config.nickname : 'bot'; }

  function ensureChat(key) {
    if (!state.chats.has(key)) state.chats.set(key, []);
    if (!state.current && key.startsWith('g:')) select(key);
  }

  function renderChats() {
    const list = $('chats');
    list.textContent = '';
    for (const key of [...state.chats.keys()].sort()) {
      const li = document.createElement('li');
      li.textContent = chatLabel(key);
      if (key === state.current) li.className = 'active';
      if (state.thinking.get(key)) { const t = document.createElement('span'); t.className = 'think'; t.textContent = '思考中…'; li.appendChild(t); }
      const unread = state.unread.get(key) || 0;
      if (unread > 0) { const badge = document.createElement('span'); badge.className = 'unread'; badge.textContent = unread; li.appendChild(badge); }
      li.onclick = () => select(key);
      list.appendChild(li);
    }
  }

  function renderHeader() {
    $('chatTitle').textContent = state.current ? chatLabel(state.current) : '选择一个聊天 · pick a chat';
    $('thinking').textContent = state.current && state.thinking.get(state.current) ? botName() + ' 思考中… thinking' : '';
  }

  function select(key) {
    state.current = key;
    state.unread.set(key, 0);
    setQuote(null);
    const group = key.startsWith('g:');
    $('atSelf').disabled = !group;
    $('asForward').disabled = !group;
    renderHeader();
    renderLog();
    renderChats();
  }

  function setQuote(entry) {
    state.quote = entry;
    $('quoting').style.display = entry ? 'block' : 'none';
    $('quotingText').textContent = entry ? '↪ 引用 ' + (entry.kind === 'bot' ? botName() : entry.nickname) + '：' + entry.text.slice(0, 40) : '';
  }

  function entryNode(entry) {
    if (entry.kind === 'error' || entry.kind === 'system' || entry.kind === 'poke' || entry.kind === 'recall') {
      const div = document.createElement('div');
      div.className = 'notice' + (entry.kind === 'error' ? ' error' : '');
      div.textContent = entry.text;
      return div;
    }
    const div = document.createElement('div');
    div.className = 'msg ' + entry.kind + (entry.recalled ? ' recalled' : '');
    const who = document.createElement('span');
    who.className = 'who';
    const time = new Date(entry.at).toLocaleTimeString();
    who.textContent = entry.kind === 'bot'
      ? botName() + ' (' + (state.config ? state.config.selfId : '') + ') · ' + time
      : entry.nickname + ' (' + entry.userId + ') · ' + time;
    if (entry.messageId !== undefined && !entry.recalled) {
      const quote = document.createElement('button');
      quote.type = 'button';
      quote.textContent = '引用';
      quote.onclick = () => { setQuote(entry); $('text').focus(); };
      who.appendChild(quote);
      if (entry.kind === 'user') {
        const recall = document.createElement('button');
        recall.type = 'button';
        recall.textContent = '撤回';
        recall.onclick = () => void post('/sim/recall', { messageId: entry.messageId });
        who.appendChild(recall);
      }
    }
    div.appendChild(who);
    if (entry.replyTo) {
      const quote = document.createElement('span');
      quote.className = 'quote';
      const quoted = state.entries.find((e) => String(e.messageId) === String(entry.replyTo));
      quote.textContent = '↪ 回复 ' + (quoted ? (quoted.kind === 'bot' ? botName() : quoted.nickname) + '：' + quoted.text.slice(0, 30) : '#' + entry.replyTo);
      div.appendChild(quote);
    }
    const bubble = document.createElement('div');
    bubble.className = 'bubble' + (entry.forward ? ' forward' : '');
    bubble.textContent = entry.forward ? '[合并转发]\\n' + entry.forward.join('\\n') : entry.text;
    div.appendChild(bubble);
    if (entry.kind === 'user' && entry.decision) {
      const why = document.createElement('span');
      why.className = 'why ' + entry.decision.outcome;
      why.textContent = entry.decision.reason;
      div.appendChild(why);
    }
    return div;
  }

  function renderLog() {
    const log = $('log');
    log.textContent = '';
    for (const entry of state.chats.get(state.current) || []) log.appendChild(entryNode(entry));
    log.scrollTop = log.scrollHeight;
  }

  function add(entry) {
    state.entries.push(entry);
    if (entry.kind === 'recall') {
      const target = state.entries.find((e) => e.kind === 'user' && String(e.messageId) === String(entry.messageId));
      if (target) target.recalled = true;
    }
    if (!entry.groupId && !entry.userId) {
      if (state.current) { state.chats.get(state.current).push(entry); renderLog(); }
      return;
    }
    const key = chatKey(entry);
    ensureChat(key);
    state.chats.get(key).push(entry);
    if (key === state.current) {
      if (entry.kind === 'recall') { renderLog(); renderChats(); return; }
      const log = $('log');
      const atBottom = log.scrollHeight - log.scrollTop - log.clientHeight < 40;
      log.appendChild(entryNode(entry));
      if (atBottom || entry.kind === 'user') log.scrollTop = log.scrollHeight;
    } else {
      state.unread.set(key, (state.unread.get(key) || 0) + 1);
    }
    renderChats();
  }

  function target() {
    if (!state.current) return null;
    return state.current.startsWith('g:') ? { groupId: state.current.slice(2) } : { privateWith: state.current.slice(2) };
  }

  function speaker() {
    const t = target();
    // In a private chat the person speaking is the one the chat is with.
    const userId = t && t.privateWith ? t.privateWith : $('userId').value.trim();
    return { userId, nickname: $('nickname').value.trim() };
  }

  async function post(path, body) {
    const response = await fetch(path, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    if (response.status === 400) alert((await response.json()).message);
    return response;
  }

  $('addGroup').onclick = () => {
    const id = $('newGroup').value.trim();
    if (!/^[0-9]{1,12}$/.test(id)) { $('newGroup').focus(); return; }
    ensureChat('g:' + id); select('g:' + id); $('newGroup').value = '';
  };
  $('addPrivate').onclick = () => {
    const id = $('newPrivate').value.trim();
    if (!/^[0-9]{1,12}$/.test(id)) { $('newPrivate').focus(); return; }
    ensureChat('p:' + id); select('p:' + id); $('newPrivate').value = '';
  };
  $('switchUser').onclick = () => {
    const now = PEOPLE.findIndex((p) => p.userId === $('userId').value.trim());
    const next = PEOPLE[(now + 1) % PEOPLE.length];
    $('userId').value = next.userId; $('nickname').value = next.nickname;
  };
  $('unquote').onclick = () => setQuote(null);
  $('poke').onclick = () => {
    const t = target();
    if (!t) return;
    void post('/sim/poke', { ...speaker(), ...(t.groupId ? { groupId: t.groupId } : {}) });
  };

  async function send() {
    const text = $('text').value;
    const t = target();
    if (!text.trim() || !t) return;
    const who = speaker();
    const body = { ...who, text, atSelf: Boolean(t.groupId) && $('atSelf').checked };
    if (t.groupId) body.groupId = t.groupId;
    if (state.quote && state.quote.messageId !== undefined) body.replyTo = String(state.quote.messageId);
    if (t.groupId && $('asForward').checked) body.forward = text.split('\\n');
    localStorage.setItem('qunli-sim', JSON.stringify({ userId: $('userId').value.trim(), nickname: who.nickname, atSelf: $('atSelf').checked }));
    $('send').disabled = true;
    try {
      const response = await post('/sim/say', body);
      if (response.ok) { $('text').value = ''; setQuote(null); }
    } finally {
      $('send').disabled = false;
      $('text').focus();
    }
  }

  $('say').onsubmit = (e) => { e.preventDefault(); void send(); };
  $('text').onkeydown = (e) => { if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) { e.preventDefault(); void send(); } };

  fetch('/sim/config').then((r) => r.json()).then((config) => {
    state.config = config;
    $('atLabel').textContent = '@' + config.nickname;
    $('offline').hidden = !config.offline;
    document.title = config.nickname + ' · qunli 群聊模拟器';
    for (const id of config.groups) ensureChat('g:' + id);
    renderChats();
    const feed = new EventSource('/sim/feed');
    feed.onopen = () => { $('status').textContent = '已连接 · ingress ' + config.ingressUrl + ' · ' + config.nickname + ' ' + config.selfId; };
    feed.onerror = () => { $('status').textContent = '连接断开，重试中 · disconnected, retrying…'; };
    feed.addEventListener('reset', () => { state.entries = []; for (const list of state.chats.values()) list.length = 0; renderLog(); });
    feed.addEventListener('thinking', (e) => { const s = JSON.parse(e.data); state.thinking.set(s.conversation, s.thinking); renderHeader(); renderChats(); });
    feed.addEventListener('decision', (e) => {
      const d = JSON.parse(e.data);
      const target = (state.chats.get(d.conversation) || []).find((x) => x.kind === 'user' && String(x.messageId) === d.messageId);
      if (!target) return;
      target.decision = d.decision;
      if (d.conversation === state.current) renderLog();
    });
    feed.onmessage = (e) => add(JSON.parse(e.data));
  });
})();
</script>
</body>
</html>
`;
