import { Global, Logger, Module } from '@nestjs/common';
import { QunliConfig } from '@app/platform';
import { loadPersona } from './load-persona.js';
import { PersonaPolicy } from './persona-policy.js';

/** The persona from `QUNLI_PERSONA`; an invalid file stops the app at start, naming every bad field. */
@Global()
@Module({
  providers: [
    {
      provide: PersonaPolicy,
      inject: [QunliConfig],
      useFactory: (config: QunliConfig): PersonaPolicy => {
        const persona = loadPersona(config.QUNLI_PERSONA);
        new Logger('Persona').log(`persona ${persona.identity.name} from ${config.QUNLI_PERSONA}`);
        return persona;
      },
    },
  ],
  exports: [PersonaPolicy],
})
export class PersonaModule {}
