import { Catch, type ArgumentsHost } from '@nestjs/common';
import { BaseExceptionFilter } from '@nestjs/core';
import { throwError, type Observable } from 'rxjs';

/**
 * Nest's default RPC filter replaces a handler's error with "Internal server error". The stream reader needs the
 * original error to tell a dependency outage (retry) from a poison event (count towards dead-lettering) and to
 * record why an entry was dead-lettered, so RPC errors pass through unchanged; HTTP errors keep Nest's handling.
 */
@Catch()
export class StreamErrorFilter extends BaseExceptionFilter {
  override catch(exception: unknown, host: ArgumentsHost): Observable<never> | void {
    if (host.getType() === 'rpc') return throwError(() => exception);
    super.catch(exception, host);
  }
}
