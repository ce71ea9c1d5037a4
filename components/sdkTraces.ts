// The Pulumi SDK records a formatted stack trace on every promise it creates (about one per resource
// property: runtime/debuggable.js) and reads it for one thing only, the leaked-promise report it
// prints when PULUMI_DEBUG_PROMISE_LEAKS is set. Formatting and keeping those strings is a large
// share of a big stack's evaluation time and memory. Unless that variable is set, the traces taken
// there are left unformatted; every other error keeps its full stack trace.
import * as path from "node:path";

const DEBUGGABLE = path.join("@pulumi", "pulumi", "runtime", "debuggable.js");

/** What the SDK records instead of a trace nobody reads. */
export const UNRECORDED_TRACE = "(not recorded; set PULUMI_DEBUG_PROMISE_LEAKS=1 to record it)";

let installed = false;

/**
 * Leaves the SDK's unread promise traces unformatted (see above). Does nothing when
 * PULUMI_DEBUG_PROMISE_LEAKS is set, or when Node maps stack traces itself (--enable-source-maps),
 * whose formatting a custom `Error.prepareStackTrace` would replace.
 */
export function skipUnreadSdkTraces(env: NodeJS.ProcessEnv = process.env): void {
  if (installed || env.PULUMI_DEBUG_PROMISE_LEAKS || process.sourceMapsEnabled) return;
  installed = true;
  const previous = Error.prepareStackTrace;
  Error.prepareStackTrace = (error, frames) => {
    if (frames[0]?.getFileName()?.endsWith(DEBUGGABLE)) return UNRECORDED_TRACE;
    if (previous) return previous(error, frames);
    // V8's and Node's own format.
    return `${Error.prototype.toString.call(error)}${frames.map((frame) => `\n    at ${frame}`).join("")}`;
  };
}
