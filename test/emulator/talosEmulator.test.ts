// The Node side of the emulator tier without Go: how the emulator process is started and always
// stopped. (The emulator itself is tested by `npm run test:emulator`.)
import { strict as assert } from "node:assert";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { startTalosEmulator, waitFor } from "./talosEmulator";

describe("talos emulator process handling", () => {
  let dir: string;

  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "talos-emulator-helper-"));
  });

  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

  /** An executable standing in for the emulator binary. */
  function program(body: string): string {
    const file = path.join(dir, "program");
    fs.writeFileSync(file, `#!${process.execPath}\n${body}\n`, { mode: 0o700 });
    return file;
  }

  it("rejects, naming the exit code, when the program exits before its ready line", async () => {
    await assert.rejects(
      startTalosEmulator({ binary: program("process.exit(3)"), nodes: [] }),
      /talos-emulator exited with code 3 before it was ready/,
    );
  });

  it("passes the nodes, version and time-out as flags and asks to stop when stdin closes", async () => {
    const argsFile = path.join(dir, "args.json");
    const emulator = await startTalosEmulator({
      binary: program(
        `require("fs").writeFileSync(${JSON.stringify(argsFile)}, JSON.stringify(process.argv.slice(2)));` +
          `console.log(JSON.stringify({ control: "http://127.0.0.1:9", nodes: [] }));` +
          `process.stdin.on("end", () => process.exit(0)); process.stdin.resume();`,
      ),
      nodes: [{ name: "cp1", address: "127.0.0.11" }],
      talosVersion: "v1.12.6",
      timeoutMs: 90_000,
      stopStepMs: 200,
    });
    await emulator.stop();
    assert.deepEqual(JSON.parse(fs.readFileSync(argsFile, "utf8")), [
      "--node",
      "cp1=127.0.0.11",
      "--talos-version",
      "v1.12.6",
      "--timeout",
      "90s",
      "--timing-scale",
      "1",
      "--stop-on-stdin-close",
    ]);
  });

  it("stop() ends a program that ignores the shutdown request and SIGTERM", async () => {
    const pidFile = path.join(dir, "pid");
    const emulator = await startTalosEmulator({
      binary: program(
        `require("fs").writeFileSync(${JSON.stringify(pidFile)}, String(process.pid));` +
          `process.on("SIGTERM", () => {}); setInterval(() => {}, 1000);` +
          `console.log(JSON.stringify({ control: "http://127.0.0.1:9", nodes: [] }));`,
      ),
      nodes: [],
      stopStepMs: 200,
    });
    const pid = Number(fs.readFileSync(pidFile, "utf8"));
    await emulator.stop();
    assert.throws(() => process.kill(pid, 0), /ESRCH/, "the program still runs");
  });

  it("waitFor gives up after its time-out with the last error", async () => {
    let calls = 0;
    await assert.rejects(
      waitFor(
        "the moon",
        async () => {
          calls++;
          throw new Error("not yet");
        },
        300,
        50,
      ),
      /waiting for the moon: not yet/,
    );
    assert.ok(calls > 1, "it retried");
  });
});
