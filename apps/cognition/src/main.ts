import { bootstrap } from '@app/platform';
import { CognitionModule } from './cognition.module.js';

await bootstrap('cognition', () => CognitionModule);
