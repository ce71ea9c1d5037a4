// `validate` without commander (automation/quickValidate.ts): the command lines it takes get exactly
// what commander would give the validate command, and every other one is left to commander.
import { strict as assert } from "node:assert";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { runCli } from "../../automation/cli";
import { plainValidateRequest, runValidate } from "../../automation/quickValidate";
import { configProblems } from "../../automation/stackValidation";
import { METAL_STACK, cleanupRepos, makeRepo, testContext } from "./helpers";

describe("validate without commander", () => {
  afterEach(() => cleanupRepos());

  it("takes `validate`, environment names and one valid --layer, as commander reads them", () => {
    assert.deepEqual(plainValidateRequest(["validate"]), { envs: [], layer: "all" });
    assert.deepEqual(plainValidateRequest(["validate", "staging", "prod"]), {
      envs: ["staging", "prod"],
      layer: "all",
    });
    assert.deepEqual(plainValidateRequest(["validate", "--layer", "app", "dev"]), {
      envs: ["dev"],
      layer: "app",
    });
    assert.deepEqual(plainValidateRequest(["validate", "dev", "--layer=foundation"]), {
      envs: ["dev"],
      layer: "foundation",
    });
  });

  it("leaves every other command line to commander", () => {
    for (const argv of [
      [],
      ["up", "staging"],
      ["check", "staging"], // commander's "did you mean"
      ["validate", "--help"],
      ["validate", "-h"],
      ["validate", "help"],
      ["validate", "--layer"],
      ["validate", "--layer", "nope"],
      ["validate", "--layer="],
      ["validate", "--layer", "app", "--layer", "app"],
      ["validate", "--", "staging"],
      ["validate", "--verbose"],
      ["validate", "-1"],
      ["validate", "stag ing"],
    ]) {
      assert.equal(plainValidateRequest(argv), undefined, JSON.stringify(argv));
    }
  });

  it("reports what commander's validate reports, for every command line it takes", async () => {
    const home = fs.mkdtempSync(path.join(os.tmpdir(), "platform-home-"));
    const root = makeRepo({
      foundation: {
        project: "talos-platform",
        stacks: { dev: METAL_STACK, broken: METAL_STACK.replace("1.36.3", "1.39.0") },
      },
      app: { project: "talos-platform-app", stacks: { dev: "config: {}\n" } },
    });
    for (const argv of [
      ["validate"],
      ["validate", "dev"],
      ["validate", "broken", "--layer", "foundation"],
      ["validate", "dev", "--layer=app"],
      ["validate", "missing"],
      ["validate", "missing", "--layer", "app"],
    ]) {
      const context = () =>
        testContext({ repoRoot: root, env: { HOME: home }, validateStack: configProblems });
      const viaCommander = context();
      const direct = context();
      const code = await runCli(argv, viaCommander);
      const request = plainValidateRequest(argv);
      assert.ok(request, JSON.stringify(argv));
      assert.equal(await runValidate(direct, request), code, JSON.stringify(argv));
      assert.equal(direct.stdout.text, viaCommander.stdout.text, JSON.stringify(argv));
      assert.equal(direct.stderr.text, viaCommander.stderr.text, JSON.stringify(argv));
      assert.ok(
        `${direct.stdout.text}${direct.stderr.text}`.length > 0,
        `${JSON.stringify(argv)} printed nothing`,
      );
    }
    fs.rmSync(home, { recursive: true, force: true });
  });
});
