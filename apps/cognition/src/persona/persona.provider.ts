import { Logger, type Provider } from '@nestjs/common';
import { loadPersona, PersonaPolicy } from '@app/persona';
import { QunliConfig } from '@app/platform';

/** The persona from `QUNLI_PERSONA`; an invalid file stops the app at start, naming every bad field. */
export const personaProvider: Provider = {
  provide: PersonaPolicy,
  inject: [QunliConfig],
  useFactory: (config: QunliConfig): PersonaPolicy => {
    const persona = loadPersona(config.QUNLI_PERSONA);
    new Logger('Persona').log(`persona ${persona.identity.name} from ${config.QUNLI_PERSONA}`);
    return persona;
  },
};
