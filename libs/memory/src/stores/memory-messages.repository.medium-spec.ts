import { DataSource } from 'typeorm';
import { dataSourceOptions } from '@app/persistence';
import { createTestDatabase, type TestDatabase } from '@app/testing';
import { MemoryMessagesRepository } from './memory-messages.repository.js';

/*
 * Event memory's search on a real PostgreSQL (ADR-0049): rows go in as the projector writes them, without
 * `search_vector`, which the table's trigger fills. Every match is ranked, however old and however many.
 */

const GROUP = '880001';
const OTHER = '880002';
const T0 = Date.parse('2026-06-01T00:00:00Z');
const MINUTE = 60_000;

let database: TestDatabase;
let db: DataSource;
let repository: MemoryMessagesRepository;

/** `count` messages of `groupId` holding `terms`, one a minute from `fromMinute` on. */
async function said(groupId: string, fromMinute: number, terms: string, count = 1, id = terms): Promise<void> {
  await db.query(
    `INSERT INTO memory_messages (event_id, group_id, user_id, display_name, from_self, sent_at, text, terms)
     SELECT $1 || '-' || $2 || '-' || i, $2, '20001', '小王', false,
            to_timestamp(($3::bigint + (($4::int + i) * ${MINUTE})::bigint) / 1000.0), $5 || ' #' || i, $5
     FROM generate_series(0, $6::int - 1) i`,
    [id, groupId, T0, fromMinute, terms, count],
  );
}

async function search(words: string[], options: { skipRecent?: number; limit?: number; before?: number } = {}) {
  const found = await repository.search(GROUP, words, {
    skipRecent: options.skipRecent ?? 0,
    limit: options.limit ?? 3,
    before: new Date(options.before ?? T0 + 1_000_000 * MINUTE),
  });
  return found.map((m) => m.text);
}

beforeEach(async () => {
  database = await createTestDatabase('memory-search');
  db = await new DataSource(dataSourceOptions(database.url)).initialize();
  repository = new MemoryMessagesRepository(db);
});

afterEach(async () => {
  await db?.destroy();
  await database?.drop();
});

describe('searching event memory', () => {
  it('ranks by how many of the words a message holds, newest first among equals, within its group and time', async () => {
    await said(GROUP, 0, '火锅 好吃', 1, 'a');
    await said(GROUP, 1, '小张 杭州 火锅', 1, 'b');
    await said(GROUP, 2, '杭州 下雨', 1, 'c');
    await said(GROUP, 3, '火锅 杭州', 1, 'd');
    await said(OTHER, 4, '小张 杭州 火锅', 1, 'e');
    await said(GROUP, 5, '今天 天气', 1, 'f');
    await said(GROUP, 6, '小张 杭州 火锅 看', 1, 'g');

    expect(await search(['小张', '杭州', '火锅'], { limit: 5 })).toEqual([
      '小张 杭州 火锅 看 #0',
      '小张 杭州 火锅 #0',
      '火锅 杭州 #0',
      '杭州 下雨 #0',
      '火锅 好吃 #0',
    ]);
    // The newest message is the prompt's recent window, and nothing said after the question counts.
    expect(await search(['小张', '杭州', '火锅'], { skipRecent: 1, limit: 2 })).toEqual([
      '小张 杭州 火锅 #0',
      '火锅 杭州 #0',
    ]);
    expect(await search(['小张'], { before: T0 + 5 * MINUTE })).toEqual(['小张 杭州 火锅 #0']);
    expect(await search(['北京'])).toEqual([]);
    expect(await search(["it's", '&'])).toEqual([]);
  });

  it('finds the one old message with a rare word under a flood of a common one', async () => {
    await said(GROUP, 0, '我们 去 海底捞 吃 火锅', 1, 'old');
    await said(GROUP, 10, '火锅', 600, 'flood');

    expect(await search(['火锅', '海底捞'])).toEqual(['我们 去 海底捞 吃 火锅 #0', '火锅 #599', '火锅 #598']);
    expect(await search(['火锅'], { skipRecent: 2, limit: 2 })).toEqual(['火锅 #597', '火锅 #596']);

    // Among messages holding one of the words each, the newest come first, whichever word they hold.
    await said(GROUP, 5_000, '周末 排队', 1, 'rare');
    expect(await search(['火锅', '海底捞', '排队'], { limit: 4 })).toEqual([
      '我们 去 海底捞 吃 火锅 #0',
      '周末 排队 #0',
      '火锅 #599',
      '火锅 #598',
    ]);
  });

  it('finds an old message holding two common words that have not met since', async () => {
    await said(GROUP, 0, '小张 说 下周 去 杭州', 1, 'old');
    await said(GROUP, 10, '小张 打游戏', 250, 'zhang');
    await said(GROUP, 10_000, '杭州 下雨', 250, 'hz');

    // 干嘛 is in no message; the old message holds both other words, each newer one only one of them.
    expect(await search(['小张', '杭州', '干嘛'], { limit: 1 })).toEqual(['小张 说 下周 去 杭州 #0']);
    expect(await search(['小张', '杭州'], { limit: 1 })).toEqual(['小张 说 下周 去 杭州 #0']);
  });

  it('keeps each row’s vector in step with its terms', async () => {
    await said(GROUP, 0, '火锅', 1, 'a');
    await db.query(`INSERT INTO memory_messages (event_id, group_id, sent_at, text) VALUES ('b', $1, now(), '图片')`, [
      GROUP,
    ]);
    expect(
      await db.query(
        `SELECT count(*)::int AS n FROM memory_messages WHERE search_vector = to_tsvector('simple', coalesce(terms, ''))`,
      ),
    ).toEqual([{ n: 2 }]);

    await db.query(`UPDATE memory_messages SET terms = '烧烤' WHERE event_id = 'a-${GROUP}-0'`);
    expect(await search(['火锅'])).toEqual([]);
    expect(await search(['烧烤'])).toEqual(['火锅 #0']);
  });
});
