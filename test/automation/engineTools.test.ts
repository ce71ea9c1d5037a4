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

  it("builds exactly the SDK's Pulumi version: a range in package.json is refused, exit 5", () => {
    // A copy of the scripts beside a package.json with a range instead of the exact version.
    const repo = path.join(dir, "repo");
    fs.mkdirSync(path.join(repo, "scripts"), { recursive: true });
    for (const file of ["engine-tools.sh", "go-env.sh"]) {
      fs.copyFileSync(path.join(ROOT, "scripts", file), path.join(repo, "scripts", file));
    }
    fs.writeFileSync(
      path.join(repo, "package.json"),
      JSON.stringify({ dependencies: { "@pulumi/pulumi": "^3.276.0" } }),
    );
    const result = spawnSync("/bin/bash", [path.join(repo, "scripts", "engine-tools.sh")], {
      env: { PATH: minimalBin(), HOME: dir, ENGINE_TOOLS_DIR: path.join(dir, "cache") },
      encoding: "utf8",
    });
    assert.match(
      refusalLine(result),
      /^test:engine: package\.json must pin @pulumi\/pulumi to an exact 3\.x\.y .*; got "\^3\.276\.0"$/,
    );
  });

  it("takes the module proxy, checksum database and flags from scripts/go-env.sh, never from the caller", function () {
    const go = spawnSync("go", ["version"], { encoding: "utf8" });
    if (go.status !== 0) this.skip();
    const hostile = {
      ...process.env,
      GOFLAGS: "-mod=mod",
      GOPROXY: "https://proxy.invalid,direct",
      GOSUMDB: "off",
      GONOSUMDB: "*",
      GOPRIVATE: "*",
      GONOPROXY: "*",
      GOINSECURE: "*",
      GONOSUMCHECK: "1",
      GOWORK: path.join(dir, "go.work"),
    };
    const names = [
      "GOFLAGS",
      "GOPROXY",
      "GOSUMDB",
      "GONOSUMDB",
      "GOPRIVATE",
      "GONOPROXY",
      "GOINSECURE",
      "GOWORK",
    ];
    const result = spawnSync(
      "/bin/bash",
      [
        "-c",
        `. ${JSON.stringify(path.join(ROOT, "scripts", "go-env.sh"))} && go env -json ${names.join(" ")} && echo "GONOSUMCHECK=\${GONOSUMCHECK-unset}"`,
      ],
      { env: hostile, encoding: "utf8" },
    );
    assert.equal(result.status, 0, result.stderr);
    const [json, check] = result.stdout.split("\n}\n");
    assert.deepEqual(JSON.parse(`${json}\n}`), {
      GOFLAGS: "-mod=readonly -buildvcs=false",
      GOPROXY: "https://proxy.golang.org",
      GOSUMDB: "sum.golang.org",
      GONOSUMDB: "",
      GOPRIVATE: "",
      GONOPROXY: "",
      GOINSECURE: "",
      GOWORK: "off",
    });
    assert.equal(check!.trim(), "GONOSUMCHECK=unset");
    // Both build scripts use it before any go command.
    for (const script of ["scripts/engine-tools.sh", "test/emulator/talos-emulator/build.sh"]) {
      const text = fs.readFileSync(path.join(ROOT, script), "utf8");
      const sourced = text.search(/^\. "\$repo\/scripts\/go-env\.sh"$/m);
      assert.ok(sourced > 0, `${script} sources scripts/go-env.sh`);
      assert.ok(
        sourced < text.search(/^[^#\n]*\bgo (mod|build|list)\b/m),
        `${script}: before go runs`,
      );
    }
  });
});
