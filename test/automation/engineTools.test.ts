import { strict as assert } from "node:assert";
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { ROOT } from "./helpers";

describe("scripts/engine-tools.sh (npm run test:engine)", () => {
  let dir: string;
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "engine-tools-"));
  });
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

  it("says in one line what it needs and exits 5 where there is neither Go nor a Pulumi CLI", () => {
    // A PATH with node and the two tools the script needs before it looks: no go, no pulumi.
    const bin = path.join(dir, "bin");
    fs.mkdirSync(bin);
    fs.symlinkSync(process.execPath, path.join(bin, "node"));
    for (const tool of ["dirname", "mkdir"]) {
      const found = ["/usr/bin", "/bin"].map((d) => path.join(d, tool)).find(fs.existsSync);
      assert.ok(found, tool);
      fs.symlinkSync(found, path.join(bin, tool));
    }
    const result = spawnSync("/bin/bash", [path.join(ROOT, "scripts", "engine-tools.sh")], {
      env: { PATH: bin, HOME: dir, ENGINE_TOOLS_DIR: path.join(dir, "cache") },
      encoding: "utf8",
    });
    assert.equal(result.status, 5, result.stderr);
    assert.equal(result.stdout, "");
    const lines = result.stderr.trim().split("\n");
    assert.equal(lines.length, 1, result.stderr);
    assert.match(
      lines[0],
      /^test:engine needs Go .* or a Pulumi CLI on PATH with pulumi-language-nodejs and the talos v0\.8\.1 plugin in ~\/\.pulumi\/plugins; found neither$/,
    );
  });
});
