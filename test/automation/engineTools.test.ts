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

  /** A PATH with node and the two tools the script needs before it looks: no go, no pulumi. */
  function minimalBin(): string {
    const bin = path.join(dir, "bin");
    fs.mkdirSync(bin);
    fs.symlinkSync(process.execPath, path.join(bin, "node"));
    for (const tool of ["dirname", "mkdir"]) {
      const found = ["/usr/bin", "/bin"].map((d) => path.join(d, tool)).find(fs.existsSync);
      assert.ok(found, tool);
      fs.symlinkSync(found, path.join(bin, tool));
    }
    return bin;
  }

  const run = (bin: string) =>
    spawnSync("/bin/bash", [path.join(ROOT, "scripts", "engine-tools.sh")], {
      env: { PATH: bin, HOME: dir, ENGINE_TOOLS_DIR: path.join(dir, "cache") },
      encoding: "utf8",
    });

  /** The one line the script prints, on stderr, when it refuses with exit 5. */
  function refusalLine(result: ReturnType<typeof run>): string {
    assert.equal(result.status, 5, result.stderr);
    assert.equal(result.stdout, "");
    const lines = result.stderr.trim().split("\n");
    assert.equal(lines.length, 1, result.stderr);
    return lines[0];
  }

  it("says in one line what it needs and exits 5 where there is neither Go nor a Pulumi CLI", () => {
    const result = run(minimalBin());
    assert.match(
      refusalLine(result),
      /^test:engine needs Go .* or a Pulumi CLI on PATH with pulumi-language-nodejs and the talos v0\.8\.1 plugin in ~\/\.pulumi\/plugins; found neither$/,
    );
  });

  it("still needs Go, for talosctl and the node emulator, with a Pulumi CLI and the plugin of your own", () => {
    const bin = minimalBin();
    const executable = (file: string) => {
      fs.mkdirSync(path.dirname(file), { recursive: true });
      fs.writeFileSync(file, "#!/bin/sh\nexit 0\n", { mode: 0o755 });
    };
    executable(path.join(bin, "pulumi"));
    executable(path.join(bin, "pulumi-language-nodejs"));
    executable(
      path.join(dir, ".pulumi", "plugins", "resource-talos-v0.8.1", "pulumi-resource-talos"),
    );
    const result = run(bin);
    assert.match(
      refusalLine(result),
      /^test:engine needs Go \(1\.26\+\) to build talosctl and the Talos node emulator .*; found no go on PATH$/,
    );
  });
});
