/** What an HTTP POST answer from ingress means to a fuzzer or a chaos driver. */
export type AnswerClass = 'accepted' | 'rejected' | 'unavailable' | 'unstructured' | 'no-answer';

/**
 * 2xx: taken or deliberately ignored. A 4xx whose body is `{ "error": { "code", "message" } }`: a structured
 * refusal. 503 with such a body: "retry later". Anything else — a 500, a 4xx without the structured body, a
 * dropped connection — is an answer the operating contract does not allow.
 */
export function classifyAnswer(status: number, body: string): AnswerClass {
  if (status === 0) return 'no-answer';
  if (status >= 200 && status < 300) return 'accepted';
  let structured: boolean;
  try {
    const parsed = JSON.parse(body) as { error?: { code?: unknown; message?: unknown } };
    structured = typeof parsed.error?.code === 'string' && typeof parsed.error.message === 'string';
  } catch {
    structured = false; // not JSON at all
  }
  if (!structured) return 'unstructured';
  if (status === 503) return 'unavailable';
  return status >= 400 && status < 500 ? 'rejected' : 'unstructured';
}
