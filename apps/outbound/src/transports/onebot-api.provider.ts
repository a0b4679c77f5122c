import { Logger, type Provider } from '@nestjs/common';
import type { Redis } from 'ioredis';
import { Keyspace } from '@app/contracts';
import { OneBotActions, OneBotHttpApi, OneBotRelayApi, OneBotWsApi, type OneBotApi } from '@app/onebot';
import { Metrics, QunliConfig, REDIS } from '@app/platform';
import { chooseTransport } from './transport.rules.js';

/** The OneBot API transport outbound sends over (a `OneBotApi`; Nest closes it on shutdown). */
export const ONEBOT_API = Symbol('ONEBOT_API');

export const oneBotApiProviders: Provider[] = [
  {
    provide: ONEBOT_API,
    inject: [QunliConfig, Metrics, REDIS, Keyspace],
    useFactory: (config: QunliConfig, metrics: Metrics, redis: Redis, keys: Keyspace): OneBotApi => {
      const logger = new Logger('OneBotApi');
      const transport = chooseTransport(config);
      switch (transport) {
        case 'http':
          logger.log(`sending over the HTTP API at ${config.ONEBOT_HTTP_API_URL ?? '?'}`);
          return OneBotHttpApi.fromConfig(config, metrics);
        case 'ws_forward': {
          const url = (config.ONEBOT_WS_URL ?? '').split(',')[0]!.trim();
          logger.log(`sending over a forward WebSocket to ${url}`);
          const api = new OneBotWsApi({
            url,
            timeoutMs: config.QUNLI_ONEBOT_TIMEOUT_MS,
            metrics,
            log: (message) => logger.warn(message),
            ...(config.ONEBOT_ACCESS_TOKEN !== undefined && { accessToken: config.ONEBOT_ACCESS_TOKEN }),
          });
          api.start();
          return api;
        }
        case 'ws_reverse':
          logger.log('sending over the reverse WebSocket held by ingress (relayed through Redis)');
          return new OneBotRelayApi({
            redis,
            keys,
            timeoutMs: config.QUNLI_ONEBOT_TIMEOUT_MS,
            metrics,
            ...(config.QUNLI_SELF_ID !== undefined && { selfId: config.QUNLI_SELF_ID }),
          });
      }
    },
  },
  { provide: OneBotActions, inject: [ONEBOT_API], useFactory: (api: OneBotApi) => new OneBotActions(api) },
];
