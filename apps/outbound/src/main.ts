import 'reflect-metadata';
import { bootstrap } from '@app/platform';
import { configureOutbound } from './configure-outbound.js';
import { OutboundModule } from './outbound.module.js';

await bootstrap('outbound', () => OutboundModule.forRoot(), { configure: configureOutbound });
