import { Injectable, Logger, type OnApplicationBootstrap } from '@nestjs/common';
import { EventKind, makeEvent, PRIORITY } from '@app/contracts';
import { EventLog } from '@app/event-bus';
import { canonicalJson, PersonaPolicy, personaVersionOf } from '@app/persona';
import { Clock, QunliConfig } from '@app/platform';

/**
 * The persona policy's content version. At start the process records the policy it runs with as
 * `persona.published` (once per version: the projector keeps one `personas` row per version), and every
 * episode names the version it ran under. The model only ever reads the policy.
 */
@Injectable()
export class PersonaVersion implements OnApplicationBootstrap {
  readonly version: string;

  constructor(
    private readonly policy: PersonaPolicy,
    private readonly eventLog: EventLog,
    private readonly config: QunliConfig,
    private readonly clock: Clock,
  ) {
    this.version = personaVersionOf(policy);
  }

  async onApplicationBootstrap(): Promise<void> {
    const event = makeEvent({
      kind: EventKind.PersonaPublished,
      groupId: null,
      payload: {
        version: this.version,
        name: this.policy.identity.name,
        source: this.config.QUNLI_PERSONA,
        policy: JSON.parse(canonicalJson(this.policy)) as Record<string, unknown>,
      },
      source: 'cognition',
      priority: PRIORITY.background,
      createdAt: this.clock.now(),
    });
    const result = await this.eventLog.appendOnce(event, `persona:${this.version}`, 365 * 86400);
    if (result.appended)
      new Logger(PersonaVersion.name).log(`persona ${this.policy.identity.name} version ${this.version} published`);
  }
}
