/**
 * One unary call on a grpc-js channel, made as grpc-js' own `Client.makeUnaryRequest` makes it
 * for a client without interceptors (grpc-js 1.14: client.ts makeUnaryRequest,
 * client-interceptors.ts getCall / BaseInterceptingCall / BaseUnaryInterceptingCall), without
 * the layers that only serve features this exporter does not use: the interceptor chain, the
 * EventEmitter call object, the argument juggling, and an `Error` captured per call for a
 * caller stack (a stack trace taken on every poll, used only in failed calls' `stack`).
 *
 * The channel (connection, reconnect backoff, deadline, message size limits, status codes,
 * HTTP/2) is grpc-js' own, through its public `Channel.createCall`; only the glue is here, and
 * it gives the same outcomes: the answer is deserialized with the method's own deserializer
 * (a failure is INTERNAL "Response message parsing error: ..." and the call is cancelled); a
 * call that ends OK without a message is UNIMPLEMENTED "No message received"; a second message
 * cancels it with UNIMPLEMENTED "Too many responses received"; an error carries `code`,
 * `details`, `metadata` and the message "<code> <NAME>: <details>". Measured on
 * bench/attach-poll.ts' cycle (GetMetrics each cycle): see bench/README.md.
 */
import * as grpc from '@grpc/grpc-js';

/** A call in flight: cancel() as ClientUnaryCall.cancel() does. */
export interface UnaryCall {
  cancel(): void;
}

const errorMessage = (e: unknown): string => (e instanceof Error ? e.message : String(e));

/** grpc-js' callErrorFromStatus, without the caller's stack. */
function errorFromStatus(status: grpc.StatusObject): grpc.ServiceError {
  const message = `${status.code} ${grpc.status[status.code]}: ${status.details}`;
  return Object.assign(new Error(message), status) as grpc.ServiceError;
}

/**
 * Calls `path` with the already serialized `request`; `done` gets the deserialized answer or
 * the error, once. Throws as Client.makeUnaryRequest does when the channel is closed.
 */
export function unaryCall<T>(
  channel: grpc.ChannelInterface,
  path: string,
  request: Buffer,
  deserialize: (b: Buffer) => T,
  deadline: grpc.Deadline,
  done: (err: grpc.ServiceError | null, res?: T) => void,
): UnaryCall {
  const call = channel.createCall(path, deadline, undefined, null, undefined);
  let readError: grpc.StatusObject | null = null;
  let response: T | null = null;
  let finished = false;
  call.start(new grpc.Metadata(), {
    onReceiveMetadata: () => {},
    onReceiveMessage: (message: Buffer) => {
      let value: T;
      try {
        value = deserialize(message);
      } catch (e) {
        readError = { code: grpc.status.INTERNAL, details: `Response message parsing error: ${errorMessage(e)}`, metadata: new grpc.Metadata() };
        call.cancelWithStatus(readError.code, readError.details);
        return;
      }
      if (response !== null) call.cancelWithStatus(grpc.status.UNIMPLEMENTED, 'Too many responses received');
      response = value;
    },
    onReceiveStatus: (s: grpc.StatusObject) => {
      if (finished) return;
      finished = true;
      const status = readError ?? s;
      if (status.code !== grpc.status.OK) done(errorFromStatus(status));
      else if (response === null) done(errorFromStatus({ code: grpc.status.UNIMPLEMENTED, details: 'No message received', metadata: status.metadata }));
      else done(null, response);
    },
  });
  call.startRead();
  call.sendMessageWithContext({}, request);
  call.halfClose();
  return { cancel: () => call.cancelWithStatus(grpc.status.CANCELLED, 'Cancelled on client') };
}
