import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';

/** What Node's parser reports, mapped to the status the sandbox answers and the reason it gives. */
function describe(code: string | undefined): { status: number; message: string } {
  switch (code) {
    case 'HPE_HEADER_OVERFLOW':
      return { status: 431, message: 'The request headers are larger than the server accepts (16 KiB).' };
    case 'ERR_HTTP_REQUEST_TIMEOUT':
    case 'ERR_HTTP_HEADERS_TIMEOUT':
      return { status: 408, message: 'The request did not arrive in time.' };
    default:
      return { status: 400, message: `Malformed HTTP request (${code ?? 'unparsable'}).` };
  }
}

/**
 * The server's `clientError` listener: a request Node could not parse (malformed request line or
 * headers, headers past `maxHeaderSize`, a timeout) still gets a JSON body in shape B, not Node's bare
 * `400 Bad Request`. Nothing is written when the socket is gone or a response already started, where
 * Node does not let the server answer.
 */
export function answerClientError(error: NodeJS.ErrnoException, socket: Duplex): void {
  // As Node's own default: answer only on a live socket nothing was written to yet.
  if (error.code === 'ECONNRESET' || !socket.writable || (socket as Socket).bytesWritten > 0) {
    socket.destroy();
    return;
  }
  const { status, message } = describe(error.code);
  const body = JSON.stringify({
    error: { code: 'INVALID_REQUEST', message, details: { field: 'request', reason: message } },
  });
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\n` +
      'content-type: application/json; charset=utf-8\r\n' +
      `content-length: ${Buffer.byteLength(body)}\r\n` +
      'connection: close\r\n\r\n' +
      body,
  );
}
