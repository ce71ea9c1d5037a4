// Loaded by mocha after ts-node (.mocharc.json). The Pulumi SDK captures a full stack trace for every
// resource and promise, and under ts-node each one is source-mapped (source-map-support), about a
// third of a Pulumi-heavy test's time. Traces the SDK takes for itself are formatted the plain V8
// way; every other error (a failed assertion, an exception in our code) keeps its TypeScript lines.
import * as path from "node:path";

const PULUMI_SDK = `${path.sep}node_modules${path.sep}@pulumi${path.sep}pulumi${path.sep}`;

const sourceMapped = Error.prepareStackTrace;
if (sourceMapped) {
  Error.prepareStackTrace = (error, frames) => {
    const top = frames[0]?.getFileName() ?? "";
    return top.includes(PULUMI_SDK)
      ? `${Error.prototype.toString.call(error)}${frames.map((frame) => `\n    at ${frame}`).join("")}`
      : sourceMapped(error, frames);
  };
}
