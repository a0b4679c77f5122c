import { bootstrap } from '@app/platform';
import { configureIngress } from './configure-ingress.js';
import { IngressModule } from './ingress.module.js';

await bootstrap('ingress', () => IngressModule, { configure: configureIngress });
