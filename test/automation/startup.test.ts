// The CLI's one start-up rule: the commands that need no engine load neither the Automation API nor
// the programs (nor the Pulumi SDK beyond its version string), so `--help`, usage errors, `stacks`
// and `validate` start in a fraction of the second those take. Checked on the real bin (or module),
// in a fresh process each, by the real paths of the files loaded.
import * as pulumi from "@pulumi/pulumi";
import { strict as assert } from "node:assert";
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { StackConfigError } from "../../components/config/problems";
import { ROOT } from "../harness";

const PRELOAD = path.join(ROOT, "test", "fixtures", "preload", "loadedModules.js");
/** The repository's real path: the preload reports real paths. */
const REAL_ROOT = fs.realpathSync(ROOT);

/** Runs bin/platform with `args`; returns its exit code and every file it loaded a module from. */
function run(args: string[]): {
  status: number | null;
  loaded: string[];
  stdout: string;
  stderr: string;
} {
  const file = path.join(
    fs.mkdtempSync(path.join(os.tmpdir(), "platform-startup-")),
    "loaded.json",
  );
  const result = spawnSync(
    process.execPath,
    ["-r", PRELOAD, path.join(ROOT, "bin", "platform"), ...args],
    { cwd: ROOT, encoding: "utf8", env: { ...process.env, LOADED_MODULES_FILE: file } },
  );
  const loaded = JSON.parse(fs.readFileSync(file, "utf8")) as string[];
  fs.rmSync(path.dirname(file), { recursive: true, force: true });
  return { status: result.status, loaded, stdout: result.stdout, stderr: result.stderr };
}

/** What a command that needs no engine must never load. */
const HEAVY = (file: string) =>
  /node_modules\/(@pulumi\/pulumi|typescript|ts-node)\//.test(file) || // the SDK, the Automation API
  [
    "dist/index.js", // the programs
    "dist/app/index.js",
    "dist/bootstrap/index.js",
    "dist/components/foundation.js",
    "dist/components/app.js",
    "dist/components/bootstrap.js",
  ].some((program) => file === path.join(REAL_ROOT, program));

describe("CLI start-up loads only what the command needs", function () {
  this.timeout(120_000);
  before(() => {
    const built = spawnSync(process.execPath, [path.join(ROOT, "scripts", "build.js")], {
      encoding: "utf8",
    });
    assert.equal(built.status, 0, built.stderr);
  });

  for (const [what, args, status] of [
    ["--help", ["--help"], 0],
    ["a usage error", ["up"], 2],
    ["a command's --help", ["upgrade", "talos", "--help"], 0],
    ["stacks (no engine needed)", ["stacks"], 0],
  ] as const) {
    it(`${what}: no Pulumi SDK, no compiler, no program`, () => {
      const result = run([...args]);
      assert.equal(result.status, status, result.stderr);
      const heavy = result.loaded.filter(HEAVY);
      assert.deepEqual(heavy, []);
      assert.ok(result.loaded.some((file) => file.endsWith("/dist/automation/cli.js")));
    });
  }

  it("validate of a stack file: no Pulumi SDK (only its version string), no compiler, no program", () => {
    // Exit 0, 2 or 5 depending on the credentials and Pulumi CLI of this machine; the report runs.
    const result = run(["validate", "staging", "--layer", "foundation"]);
    assert.ok([0, 2, 5].includes(result.status ?? -1), result.stderr);
    assert.match(result.stdout, /foundation\/staging \(Pulumi\.staging\.yaml\)/);
    const sdkVersion = fs.realpathSync(
      path.join(ROOT, "node_modules", "@pulumi", "pulumi", "version.js"),
    );
    assert.deepEqual(
      result.loaded.filter((file) => HEAVY(file) && file !== sdkVersion),
      [],
    );
    assert.ok(result.loaded.some((file) => file.endsWith("/dist/components/config/validate.js")));
  });

  it("validate of a stack file's name checks its stack", () => {
    const result = run(["validate", "Pulumi.staging.yaml", "--layer", "foundation"]);
    assert.ok([0, 2, 5].includes(result.status ?? -1), result.stderr);
    assert.match(result.stdout, /^foundation\/staging \(Pulumi\.staging\.yaml\)/m);
    assert.doesNotMatch(result.stdout + result.stderr, /Pulumi\.Pulumi/);
  });

  it("a command that runs the engine loads the Automation API (when it gets that far)", () => {
    // No Pulumi CLI on PATH: the command stops at the CLI check, after loading the Automation API.
    const result = run(["outputs", "staging"]);
    assert.ok(
      result.loaded.some((file) => /@pulumi\/pulumi\/automation\//.test(file)),
      result.stderr,
    );
  });
});

describe("offline stack-file validation loads no Pulumi SDK", () => {
  it("components/config/validate loads without @pulumi/pulumi (what `validate` runs)", () => {
    const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "platform-startup-")), "l.json");
    const result = spawnSync(
      process.execPath,
      [
        "-r",
        PRELOAD,
        "-e",
        `require(${JSON.stringify(path.join(ROOT, "dist", "components", "config", "validate.js"))})`,
      ],
      { cwd: ROOT, encoding: "utf8", env: { ...process.env, LOADED_MODULES_FILE: file } },
    );
    assert.equal(result.status, 0, result.stderr);
    const loaded = JSON.parse(fs.readFileSync(file, "utf8")) as string[];
    fs.rmSync(path.dirname(file), { recursive: true, force: true });
    assert.deepEqual(loaded.filter(HEAVY), []);
  });

  it("a stack file's problems still reach Pulumi as a RunError (printed without a stack trace)", () => {
    const error = new StackConfigError("Pulumi.staging.yaml", [
      "nodes: needs 1, 3 or 5 control planes",
    ]);
    assert.equal(pulumi.RunError.isInstance(error), true);
  });
});
