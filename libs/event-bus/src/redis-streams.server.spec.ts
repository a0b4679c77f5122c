import { ConsumerGroup, EventKind } from '@app/contracts';
import type { PartitionedConsumer } from './partitioned-consumer.js';
import { RedisStreamsServer } from './redis-streams.server.js';

/** A server of `group` with handlers for `kinds`; records whether it went on to create its consumer. */
function serverOf(group: string, kinds: string[]): { server: RedisStreamsServer; created: () => boolean } {
  let created = false;
  const server = new RedisStreamsServer(group, () => {
    created = true;
    return { start: () => Promise.resolve(), stop: () => Promise.resolve() } as unknown as PartitionedConsumer;
  });
  for (const kind of kinds) server.addHandler(kind, () => Promise.resolve(), true);
  return { server, created: () => created };
}

function listen(server: RedisStreamsServer): Promise<unknown> {
  return new Promise((resolve) => server.listen((error) => resolve(error)));
}

describe('RedisStreamsServer and HANDLED_KINDS (ADR 0044)', () => {
  it('refuses to start a listed group with a handler of a kind the list leaves out, naming the kind', async () => {
    const { server, created } = serverOf(ConsumerGroup.Outbound, [EventKind.ActionSend, EventKind.DecisionMade]);
    const error = await listen(server);
    expect(error).toBeInstanceOf(Error);
    expect((error as Error).message).toContain(EventKind.DecisionMade);
    expect((error as Error).message).not.toContain(EventKind.ActionSend);
    expect(created()).toBe(false);
  });

  it('starts a listed group whose handlers are all listed, and a group the list does not name', async () => {
    const outbound = serverOf(ConsumerGroup.Outbound, [EventKind.ActionSend, EventKind.MessageRecalled]);
    expect(await listen(outbound.server)).toBeUndefined();
    expect(outbound.created()).toBe(true);
    const other = serverOf('test-group', [EventKind.DecisionMade]);
    expect(await listen(other.server)).toBeUndefined();
    expect(other.created()).toBe(true);
  });
});
