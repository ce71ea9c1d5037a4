import { strict as assert } from "node:assert";
import { type SpawnSyncReturns, spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { REQUIRED_NODE_MAJOR, nodeVersionProblem } from "../../automation/nodeVersion";
import { ROOT } from "./helpers";

// The plain-JS twin that `npm test` and `npm run platform` run first (it has no types).
// eslint-disable-next-line @typescript-eslint/no-require-imports
const script = require("../../scripts/check-node.js") as {
  REQUIRED: number;
  nodeVersionProblem: (version: string) => string | undefined;
};

/** A Node.js older than the project needs on this machine (the system one), if any. */
function oldNode(): string | undefined {
  for (const candidate of ["/usr/bin/node", "/usr/local/bin/node"]) {
    const result = spawnSync(candidate, ["-p", "process.versions.node"], { encoding: "utf8" });
    if (result.status === 0 && parseInt(result.stdout, 10) < REQUIRED_NODE_MAJOR) return candidate;
  }
  return undefined;
}

describe("the Node.js version check", () => {
  const packageJson = JSON.parse(fs.readFileSync(path.join(ROOT, "package.json"), "utf8"));

  it("asks for the version .nvmrc and package.json's engines name, in the CLI and in the script alike", () => {
    assert.equal(
      fs.readFileSync(path.join(ROOT, ".nvmrc"), "utf8").trim(),
      String(REQUIRED_NODE_MAJOR),
    );
    assert.equal(packageJson.engines.node, `>=${REQUIRED_NODE_MAJOR}`);
    assert.equal(script.REQUIRED, REQUIRED_NODE_MAJOR);
    for (const version of ["20.20.2", "18.0.0", "22.0.0", "24.1.0"]) {
      assert.equal(script.nodeVersionProblem(version), nodeVersionProblem(version), version);
    }
    assert.equal(
      nodeVersionProblem("20.20.2"),
      "talos-platform needs Node.js 22 or newer; this is Node.js 20.20.2. Switch with `nvm use` (it reads .nvmrc) or install Node.js 22 (https://nodejs.org), then run `npm ci`.",
    );
    assert.equal(nodeVersionProblem("22.0.0"), undefined);
  });

  it("runs first in npm test and npm run platform", () => {
    for (const name of ["test", "platform"]) {
      assert.match(packageJson.scripts[name], /^node scripts\/check-node\.js && /, name);
    }
  });

  it("on an older Node.js, npm test's check and the CLI each print that one line", function () {
    this.timeout(120_000);
    const node = oldNode();
    if (node === undefined) this.skip();
    const version = spawnSync(node!, ["-p", "process.versions.node"], {
      encoding: "utf8",
    }).stdout.trim();
    const check = spawnSync(node!, ["scripts/check-node.js"], { cwd: ROOT, encoding: "utf8" });
    assert.equal(check.status, 1);
    assert.equal(check.stderr, `${nodeVersionProblem(version)}\n`);
    // The CLI's bin (what `npm run platform` execs and a user runs), and automation/main.ts itself.
    for (const entry of [
      ["bin/platform"],
      ["-r", "ts-node/register/transpile-only", "automation/main.ts"],
    ]) {
      const cli: SpawnSyncReturns<string> = spawnSync(node!, [...entry, "validate"], {
        cwd: ROOT,
        encoding: "utf8",
        env: { PATH: path.dirname(node!) },
      });
      assert.equal(cli.status, 5, entry.join(" "));
      assert.equal(cli.stderr, `${nodeVersionProblem(version)}\n`);
      assert.equal(cli.stdout, "");
    }
  });
});
