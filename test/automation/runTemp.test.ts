import { strict as assert } from "node:assert";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { UserError } from "../../automation/errors";
import { openRunTemp } from "../../automation/runTemp";

describe("the run's private temp folder", () => {
  let base: string;
  beforeEach(() => {
    base = fs.mkdtempSync(path.join(os.tmpdir(), "runtemp-"));
  });
  afterEach(() => fs.rmSync(base, { recursive: true, force: true }));

  const open = (pid: number, alive: readonly number[] = [], host = "ws1") =>
    openRunTemp({ base, user: "1000", pid, host, isAlive: (p) => alive.includes(p) });

  it("keeps the folders of live runs and of other hosts, removes this host's dead ones", () => {
    const user = path.join(base, "platform-1000");
    fs.mkdirSync(user, { mode: 0o700 });
    for (const name of ["run-11@ws1", "run-12@ws1", "run-13@other", "unrelated"]) {
      fs.mkdirSync(path.join(user, name));
      fs.writeFileSync(path.join(user, name, "kubeconfig"), "secret");
    }
    const run = open(20, [11]);
    assert.deepEqual(run.swept, ["run-12@ws1"]);
    assert.deepEqual(fs.readdirSync(user).sort(), [
      "run-11@ws1",
      "run-13@other",
      "run-20@ws1",
      "unrelated",
    ]);
    run.remove();
    assert.ok(!fs.existsSync(run.dir));
  });

  it("empties a folder left by a dead run of the same pid, and makes both folders 0700", () => {
    const old = umask(0o000);
    try {
      fs.mkdirSync(path.join(base, "platform-1000"), { mode: 0o755 });
      fs.mkdirSync(path.join(base, "platform-1000", "run-7@ws1"));
      fs.writeFileSync(path.join(base, "platform-1000", "run-7@ws1", "talosconfig"), "old");
      const run = open(7);
      assert.deepEqual(fs.readdirSync(run.dir), []);
      assert.equal(fs.statSync(run.dir).mode & 0o777, 0o700);
      assert.equal(fs.statSync(path.dirname(run.dir)).mode & 0o777, 0o700);
    } finally {
      umask(old);
    }
  });

  it("refuses a symbolic link or a file in the user's folder's place, naming it", () => {
    fs.mkdirSync(path.join(base, "elsewhere"));
    fs.symlinkSync(path.join(base, "elsewhere"), path.join(base, "platform-1000"));
    assert.throws(
      () => open(1),
      (error: unknown) =>
        error instanceof UserError &&
        error.message.includes(path.join(base, "platform-1000")) &&
        /not a folder/.test(error.message),
    );
    assert.deepEqual(fs.readdirSync(path.join(base, "elsewhere")), []);
  });

  it("names the host safely in the folder name", () => {
    assert.equal(path.basename(open(3, [], "a/b c").dir), "run-3@a_b_c");
  });
});

function umask(mask: number): number {
  return process.umask(mask);
}
