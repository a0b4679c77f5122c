import { bootstrap } from '@app/platform';
import { LifeDirectorModule } from './life-director.module.js';

await bootstrap('life-director', () => LifeDirectorModule);
