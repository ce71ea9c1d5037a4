import { strict as assert } from "node:assert";
import * as fs from "node:fs";
import * as path from "node:path";
import { runCli } from "../../automation/cli";
import { ExitCode } from "../../automation/errors";
import { missingCliError } from "../../automation/pulumiCli";
import { validateStackConfig } from "../../automation/readiness";
import { ROOT, cleanupRepos, makeRepo, testContext } from "./helpers";

/** A repository with the real examples/ folder. */
function repoWithExamples(stacks: Record<string, string> = {}): string {
  const root = makeRepo({ foundation: { project: "talos-platform", stacks } });
  fs.cpSync(path.join(ROOT, "examples"), path.join(root, "examples"), { recursive: true });
  return root;
}

describe("init", () => {
  afterEach(cleanupRepos);

  const context = (root: string, env: Record<string, string> = {}) =>
    testContext({ repoRoot: root, env, validateStack: validateStackConfig });

  it("writes the stack file from an example, creates the stack with its secrets provider, and says what is missing", async () => {
    const root = repoWithExamples();
    const ctx = context(root);
    assert.equal(await runCli(["init", "dev", "--from", "proxmox-vm"], ctx), ExitCode.ok);
    assert.equal(
      fs.readFileSync(path.join(root, "Pulumi.dev.yaml"), "utf8"),
      fs.readFileSync(path.join(ROOT, "examples", "Pulumi.proxmox-vm.yaml"), "utf8"),
    );
    const [open] = ctx.workspaces.callsOf("openStack");
    assert.equal(open.request.stackName, "dev");
    assert.equal(open.request.create, true);
    assert.equal(open.request.secretsProvider, "passphrase");
    const passphrase = path.join(root, ".pulumi-state", "passphrase");
    assert.equal(open.request.envVars.PULUMI_CONFIG_PASSPHRASE_FILE, passphrase);
    assert.equal(fs.statSync(passphrase).mode & 0o777, 0o600);
    assert.deepEqual(ctx.workspaces.callsOf("operation"), [], "init runs no engine operation");
    const out = ctx.stdout.text;
    assert.match(out, /^wrote Pulumi\.dev\.yaml from examples\/Pulumi\.proxmox-vm\.yaml/m);
    assert.match(
      out,
      new RegExp(
        `^init foundation/dev: the stack exists on backend file://${root}/\\.pulumi-state \\(default\\) with secrets provider passphrase \\(default\\)$`,
        "m",
      ),
    );
    assert.match(
      out,
      /^foundation\/dev \(Pulumi\.dev\.yaml\): 1 problem\n {2}- proxmoxApiToken: missing credential/m,
    );
    assert.match(
      out,
      new RegExp(
        `^ {2}cd \\. && export PULUMI_BACKEND_URL=file://${root}/\\.pulumi-state PULUMI_CONFIG_PASSPHRASE_FILE=${passphrase}\\n {2}pulumi config set --secret --stack dev proxmoxApiToken$`,
        "m",
      ),
    );
    assert.match(ctx.stderr.text, /^note: Generated a passphrase for the stack secrets/m);
    assert.equal(
      fs
        .readdirSync(path.join(root, ".pulumi-state", "locks"), { recursive: true })
        .filter((file) => String(file).endsWith(".lock")).length,
      0,
      "lock released",
    );
  });

  it("creates the stack of an existing stack file, and reports it ready when nothing is missing", async () => {
    const root = repoWithExamples({
      metal: fs.readFileSync(path.join(ROOT, "examples", "Pulumi.baremetal.yaml"), "utf8"),
    });
    const ctx = context(root, { PULUMI_CONFIG_PASSPHRASE: "FAKE-SECRET" });
    assert.equal(await runCli(["init", "metal"], ctx), ExitCode.ok);
    assert.match(ctx.stdout.text, /^foundation\/metal \(Pulumi\.metal\.yaml\): ready to preview$/m);
    assert.match(ctx.stdout.text, /^init metal: 1 of 1 stack ready; ready to preview$/m);
    assert.match(ctx.stdout.text, /^ {2}pulumi config set --secret --stack metal <key>$/m);
    assert.doesNotMatch(ctx.stdout.text, /FAKE-SECRET/);
  });

  it("without a stack file, points at the examples", async () => {
    const root = repoWithExamples();
    const ctx = context(root);
    assert.equal(await runCli(["init", "dev"], ctx), ExitCode.usage);
    assert.equal(
      ctx.stderr.text,
      "environment: no stack file Pulumi.dev.yaml in the foundation layer (.) to create the stack from; " +
        'got "dev". Start from an example: npm run platform -- init dev --from <baremetal|oci|proxmox-vm> (examples/README.md)\n',
    );
    assert.deepEqual(ctx.workspaces.calls, []);
  });

  it("never overwrites a stack file, and names the examples it knows", async () => {
    const root = repoWithExamples({ dev: "config: {}\n" });
    const ctx = context(root);
    assert.equal(await runCli(["init", "dev", "--from", "baremetal"], ctx), ExitCode.usage);
    assert.match(
      ctx.stderr.text,
      /^init: Pulumi\.dev\.yaml exists already; init never overwrites a stack file/,
    );
    assert.equal(fs.readFileSync(path.join(root, "Pulumi.dev.yaml"), "utf8"), "config: {}\n");
    const unknown = context(root);
    assert.equal(await runCli(["init", "lab", "--from", "vmware"], unknown), ExitCode.usage);
    assert.match(
      unknown.stderr.text,
      /^--from: no example of that name in examples\/; got "vmware"\. Use one of: baremetal, oci, proxmox-vm/,
    );
  });

  it("without the Pulumi CLI, writes the file and says to rerun once the CLI is there", async () => {
    const root = repoWithExamples();
    const ctx = context(root);
    ctx.workspaces.cliError = missingCliError(
      "/home/op/.pulumi/versions/3.276.0",
      new Error("spawn pulumi ENOENT"),
    );
    assert.equal(await runCli(["init", "dev", "--from", "oci"], ctx), ExitCode.missingCli);
    assert.ok(fs.existsSync(path.join(root, "Pulumi.dev.yaml")));
    assert.match(ctx.stderr.text, /^Pulumi CLI: not found on PATH/m);
    assert.match(ctx.stderr.text, /rerun `npm run platform -- init dev`$/m);
    assert.deepEqual(ctx.workspaces.callsOf("openStack"), []);
  });
});
