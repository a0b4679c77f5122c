import { Body, Controller, Get, HttpCode, HttpException, Post, Query } from '@nestjs/common';
import { EventLog } from '@app/event-bus';
import { Clock, Metrics } from '@app/platform';
import { keywordCommand, keywordCommandEvent, type KeywordCommandInput } from './keyword-command.js';
import { KeywordError } from './keyword.errors.js';
import { KeywordLexiconStore } from './keyword-lexicon.store.js';
import { setKeyOf, setRef } from './lexicon.rules.js';

/**
 * The lexicon over HTTP on the scheduler's port, for the panel: `POST /keywords/commands` with
 * `{ command, scope, ownerId?, term, aliases?, weight?, requestedBy? }` appends `keyword.control.requested` and
 * answers 202 with its event id (the keywords consumer applies it in the set's group order; the set's version
 * then moves). `GET /keywords/terms?scope=group&ownerId=123` lists a set. Bad input: 400 with the error's code.
 */
@Controller('keywords')
export class KeywordsController {
  private readonly rejected;

  constructor(
    private readonly log: EventLog,
    private readonly store: KeywordLexiconStore,
    private readonly clock: Clock,
    metrics: Metrics,
  ) {
    this.rejected = metrics.counter({
      name: 'qunli_keyword_rejected_total',
      help: 'Keyword commands and learned words refused, by error code',
      labelNames: ['code'],
    });
  }

  @Post('commands')
  @HttpCode(202)
  async command(@Body() body: unknown): Promise<{ eventId: string; set: string }> {
    const { ref, payload } = this.validated(() =>
      keywordCommand((typeof body === 'object' && body !== null ? body : {}) as KeywordCommandInput),
    );
    const event = keywordCommandEvent(ref, payload, 'scheduler', this.clock.now());
    await this.log.append(event);
    return { eventId: event.id, set: setKeyOf(ref) };
  }

  @Get('terms')
  async terms(@Query('scope') scope: unknown, @Query('ownerId') ownerId: unknown): Promise<unknown> {
    const ref = this.validated(() =>
      setRef(typeof scope === 'string' ? scope : '', typeof ownerId === 'string' ? ownerId : ''),
    );
    const key = setKeyOf(ref);
    const set = (await this.store.loadSets([key])).get(key);
    return {
      set: key,
      version: set?.meta?.version ?? 0,
      terms: [...(set?.terms.values() ?? [])].sort((a, b) => b.weight - a.weight),
    };
  }

  private validated<T>(build: () => T): T {
    try {
      return build();
    } catch (error) {
      if (!(error instanceof KeywordError)) throw error;
      this.rejected.inc({ code: error.code });
      throw new HttpException({ error: error.toJSON() }, 400);
    }
  }
}
