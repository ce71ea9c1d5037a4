// The process tree a forced stop ends, with real processes: a stand-in engine (a child of a wrapper
// that plays the CLI) and its plugin in a process group of its own, with a child of its own.
import { spawn } from "node:child_process";
import { strict as assert } from "node:assert";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import {
  findDescendants,
  rememberDescendants,
  stopDescendants,
} from "../../automation/descendants";

/** Whether a process runs (a zombie does not). */
function running(pid: number): boolean {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2).split(" ")[0] !== "Z";
  } catch {
    return false;
  }
}

describe("a forced stop's process tree", function () {
  this.timeout(30_000);
  const pids: number[] = [];
  before(function () {
    if (process.platform !== "linux") this.skip();
  });
  after(() => {
    for (const pid of pids) {
      try {
        process.kill(pid, "SIGKILL");
      } catch {
        // gone
      }
    }
  });

  /** Starts wrapper → engine → plugin (setpgid, deaf to SIGTERM) → its child; returns the pids. */
  async function tree(): Promise<{
    wrapper: number;
    engine: number;
    plugin: number;
    child: number;
  }> {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "tree-"));
    const out = path.join(dir, "pids");
    const deaf = "process.on('SIGTERM',()=>{});setInterval(()=>{},1000);";
    const plugin = `${deaf}const c=require('child_process').spawn(process.execPath,['-e',${JSON.stringify(deaf)}],{stdio:'ignore'});require('fs').writeFileSync(${JSON.stringify(out)},process.ppid+' '+process.pid+' '+c.pid);`;
    const engine = `require('child_process').spawn(process.execPath,['-e',${JSON.stringify(plugin)}],{detached:true,stdio:'ignore'});setInterval(()=>{},1000);`;
    const wrapper = spawn(
      process.execPath,
      [
        "-e",
        `require('child_process').spawn(process.execPath,['-e',${JSON.stringify(engine)}],{stdio:'ignore'});setInterval(()=>{},1000);`,
      ],
      { stdio: "ignore" },
    );
    pids.push(wrapper.pid!);
    for (let i = 0; i < 200 && !fs.existsSync(out); i++)
      await new Promise((r) => setTimeout(r, 50));
    await new Promise((r) => setTimeout(r, 100));
    const [engineId, pluginId, childId] = fs.readFileSync(out, "utf8").split(" ").map(Number);
    fs.rmSync(dir, { recursive: true, force: true });
    pids.push(engineId!, pluginId!, childId!);
    return { wrapper: wrapper.pid!, engine: engineId!, plugin: pluginId!, child: childId! };
  }

  it("finds every descendant across process groups, parents first", async () => {
    const t = await tree();
    const found = findDescendants(t.wrapper).map((entry) => entry.pid);
    assert.deepEqual(found, [t.engine, t.plugin, t.child]);
  });

  it("stops them all, with SIGKILL for those deaf to SIGTERM", async () => {
    const t = await tree();
    const stopped = stopDescendants({ root: t.wrapper, graceMs: 300 });
    assert.deepEqual(stopped.sort(), [t.engine, t.plugin, t.child].sort());
    await new Promise((r) => setTimeout(r, 300));
    for (const pid of [t.engine, t.plugin, t.child]) assert.ok(!running(pid), `${pid} stopped`);
  });

  it("also stops the plugins remembered at the first interrupt after the engine exited (re-parented)", async () => {
    const t = await tree();
    rememberDescendants({ root: t.wrapper });
    process.kill(t.engine, "SIGKILL"); // the Pulumi CLI gone at a terminal's second Ctrl-C
    await new Promise((r) => setTimeout(r, 200));
    assert.ok(!findDescendants(t.wrapper).some((entry) => entry.pid === t.plugin), "re-parented");
    stopDescendants({ root: t.wrapper, graceMs: 300 });
    await new Promise((r) => setTimeout(r, 300));
    assert.ok(!running(t.plugin) && !running(t.child), "the plugin and its child stopped");
  });
});
