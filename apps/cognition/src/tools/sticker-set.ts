import { readFileSync } from 'node:fs';
import { Injectable, Logger } from '@nestjs/common';
import { parse as parseYaml } from 'yaml';
import { QunliError } from '@app/contracts';
import { QunliConfig } from '@app/platform';

export interface Sticker {
  /** What the planner names (`[a-z0-9_]+`). */
  id: string;
  /** A OneBot image `file`: URL, `file://` path or `base64://…`. */
  file: string;
  /** When to use it, in Chinese (the planner chooses by it). */
  description: string;
}

/** Parse the sticker file (`QUNLI_STICKERS`): a YAML list of `{id, file, description}`; bad entries are errors. */
export function parseStickers(text: string, source: string): Sticker[] {
  const raw: unknown = parseYaml(text);
  const list: unknown = Array.isArray(raw) ? raw : (raw as { stickers?: unknown } | null)?.stickers;
  if (!Array.isArray(list))
    throw new QunliError('STICKERS.INVALID', `${source} must be a list of stickers`, { source });
  const problems: string[] = [];
  const stickers: Sticker[] = [];
  list.forEach((entry: unknown, i) => {
    const s = entry as Partial<Sticker> | null;
    if (!s || typeof s.id !== 'string' || !/^[a-z0-9_]{1,32}$/.test(s.id))
      problems.push(`${i}.id must match [a-z0-9_]{1,32}`);
    else if (typeof s.file !== 'string' || s.file.length === 0) problems.push(`${i}.file is required`);
    else if (typeof s.description !== 'string' || s.description.length === 0)
      problems.push(`${i}.description is required`);
    else stickers.push({ id: s.id, file: s.file, description: s.description });
  });
  if (problems.length > 0)
    throw new QunliError('STICKERS.INVALID', `${source}: ${problems.join('; ')}`, { source, problems });
  return stickers;
}

/** The stickers `send_emoji` may send; empty (and no send_emoji tool) when `QUNLI_STICKERS` is unset. */
@Injectable()
export class StickerSet {
  private readonly stickers: Sticker[];

  constructor(config: QunliConfig) {
    if (!config.QUNLI_STICKERS) {
      this.stickers = [];
      return;
    }
    let text: string;
    try {
      text = readFileSync(config.QUNLI_STICKERS, 'utf8');
    } catch (error) {
      throw new QunliError(
        'STICKERS.NOT_FOUND',
        `QUNLI_STICKERS ${config.QUNLI_STICKERS}: ${(error as Error).message}`,
      );
    }
    this.stickers = parseStickers(text, config.QUNLI_STICKERS);
    new Logger(StickerSet.name).log(`${this.stickers.length} stickers from ${config.QUNLI_STICKERS}`);
  }

  list(): Sticker[] {
    return this.stickers;
  }

  get(id: string): Sticker | undefined {
    return this.stickers.find((s) => s.id === id);
  }
}
