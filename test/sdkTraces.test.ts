// The programs leave the Pulumi SDK's unread promise traces unformatted, and nothing else: checked in
// a fresh node process, since the hook is process-wide.
import { strict as assert } from "node:assert";
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { ROOT } from "./harness";

/** Runs `script` in a plain node with the hook installed; returns its JSON answer. */
function inFreshProcess(script: string, env: NodeJS.ProcessEnv = {}): any {
  const result = spawnSync(
    process.execPath,
    [
      "--conditions=source",
      "-r",
      "ts-node/register/transpile-only",
      "-e",
      `require(${JSON.stringify(path.join(ROOT, "components", "sdkTraces.ts"))}).skipUnreadSdkTraces();\n${script}`,
    ],
    {
      cwd: ROOT,
      encoding: "utf8",
      env: { ...process.env, PULUMI_DEBUG_PROMISE_LEAKS: "", ...env },
    },
  );
  assert.equal(result.status, 0, result.stderr);
  return JSON.parse(result.stdout.trim().split("\n").pop()!);
}

const SCRIPT = `
  const { debuggablePromise } = require("@pulumi/pulumi/runtime/debuggable");
  const { UNRECORDED_TRACE } = require(${JSON.stringify(path.join(ROOT, "components", "sdkTraces.ts"))});
  const p = Promise.resolve(1);
  function ours() { return new Error("boom").stack; }
  debuggablePromise(p, "test").then(() =>
    console.log(JSON.stringify({ sdk: p._debugStackTrace, UNRECORDED_TRACE, ours: ours() })),
  );
`;

describe("the SDK's unread promise traces (components/sdkTraces.ts)", () => {
  it("are not formatted, while every other error keeps its whole trace", () => {
    const { sdk, UNRECORDED_TRACE, ours } = inFreshProcess(SCRIPT);
    assert.equal(sdk, UNRECORDED_TRACE);
    assert.match(ours, /^Error: boom\n {4}at ours \(/);
  });

  it("are recorded as before when PULUMI_DEBUG_PROMISE_LEAKS asks for them", () => {
    const { sdk } = inFreshProcess(SCRIPT, { PULUMI_DEBUG_PROMISE_LEAKS: "1" });
    assert.match(sdk, /^Error\n {4}at debuggablePromise \(.*debuggable\.[jt]s:/);
  });

  it("are skipped by every project's entry", () => {
    for (const entry of ["index.ts", "app/index.ts", "bootstrap/index.ts"]) {
      const source = fs.readFileSync(path.join(ROOT, entry), "utf8");
      assert.match(source, /\nskipUnreadSdkTraces\(\);\n/, entry);
    }
  });
});
