/**
 * A failure with a stable code (`AREA.WHAT`), the offending value and a human message.
 * Codes are part of the public contract: metrics, logs and the panel group by them.
 */
export class QunliError extends Error {
  constructor(
    readonly code: string,
    message: string,
    readonly details: Record<string, unknown> = {},
  ) {
    super(message);
    this.name = 'QunliError';
  }

  toJSON(): { code: string; message: string; details: Record<string, unknown> } {
    return { code: this.code, message: this.message, details: this.details };
  }
}

/** One field that failed validation, with the path to it (`payload.sender.userId`). */
export interface FieldError {
  path: string;
  message: string;
}

export class ValidationFailed extends QunliError {
  constructor(
    readonly what: string,
    readonly fields: FieldError[],
  ) {
    super('CONTRACT.INVALID', `invalid ${what}: ${fields.map((f) => `${f.path} ${f.message}`).join('; ')}`, {
      what,
      fields,
    });
  }
}
