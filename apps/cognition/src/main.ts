import { warmSegmenter } from '@app/persistence';
import { bootstrap } from '@app/platform';
import { CognitionModule } from './cognition.module.js';

// Memory recall segments the question: load jieba before the first episode.
warmSegmenter();

await bootstrap('cognition', () => CognitionModule);
