import type { DataSource } from 'typeorm';
import { AgendaRepository } from './agenda.repository.js';

/** A DataSource whose queries stay open until the test answers them. */
function heldQueries() {
  const open: { sql: string; answer: (rows: unknown[]) => void; fail: (error: Error) => void }[] = [];
  const dataSource = {
    query: (sql: string) =>
      new Promise<unknown[]>((answer, fail) => {
        open.push({ sql, answer, fail });
      }),
  } as unknown as DataSource;
  return { dataSource, open };
}

const ROW = {
  persona_id: 'p1',
  mood: '平静',
  timezone: 'Asia/Tokyo',
  default_disclosure: 'vague',
  group_disclosure: { '2001': 'open' },
  long_term_goals: [],
};

describe('AgendaRepository.agenda', () => {
  it('lets calls made while a read is in flight share it, and reads again once it has answered', async () => {
    const { dataSource, open } = heldQueries();
    const agenda = new AgendaRepository(dataSource);

    const first = [agenda.agenda(), agenda.agenda(), agenda.agenda()];
    expect(open).toHaveLength(1);
    open[0]!.answer([ROW]);
    const views = await Promise.all(first);
    expect(views.map((v) => v?.timezone)).toEqual(['Asia/Tokyo', 'Asia/Tokyo', 'Asia/Tokyo']);
    expect(views[0]).toMatchObject({
      personaId: 'p1',
      defaultDisclosure: 'vague',
      groupDisclosure: { '2001': 'open' },
    });

    // A call after the answer does not get the old row: it reads again and sees what changed.
    const later = agenda.agenda();
    expect(open).toHaveLength(2);
    open[1]!.answer([{ ...ROW, timezone: null }]);
    expect((await later)?.timezone).toBe('Asia/Shanghai');
  });

  it('hands a failed read to every caller that shared it, and the next call reads again', async () => {
    const { dataSource, open } = heldQueries();
    const agenda = new AgendaRepository(dataSource);

    const shared = [agenda.agenda(), agenda.agenda()];
    open[0]!.fail(new Error('connection reset'));
    await expect(shared[0]).rejects.toThrow('connection reset');
    await expect(shared[1]).rejects.toThrow('connection reset');

    const retry = agenda.agenda();
    expect(open).toHaveLength(2);
    open[1]!.answer([]);
    expect(await retry).toBeNull();
  });
});
