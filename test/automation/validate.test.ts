import { strict as assert } from "node:assert";
import * as fs from "node:fs";
import * as path from "node:path";
import { runCli } from "../../automation/cli";
import semverGt from "semver/functions/gt";
import semverGte from "semver/functions/gte";
import { PROGRAM_CLI_MINIMUM, PULUMI_CLI_MINIMUM, probePulumiCli } from "../../automation/cliProbe";
import { ExitCode } from "../../automation/errors";
import { missingCliError } from "../../automation/pulumiCli";
import { validateStackConfig } from "../../automation/readiness";
import { METAL_STACK, cleanupRepos, makeRepo, testContext } from "./helpers";
import { cleanupTemp, fakeTools, tempDir } from "./process";

/** One Proxmox VM: needs the Proxmox API token. */
const VM_STACK = [
  "config:",
  "  talos-platform:cluster: { name: lab, endpoint: 192.0.2.21, talosVersion: v1.13.9, kubernetesVersion: 1.36.3 }",
  "  talos-platform:proxmox: { endpoint: 'https://pve.example.net:8006/', hosts: [{ name: pve }] }",
  "  talos-platform:nodes:",
  "    - name: cp-1",
  "      role: controlplane",
  "      platform: proxmox",
  "      network: { addresses: [192.0.2.21/24], gateway: 192.0.2.1 }",
  "      proxmox: { host: pve, vmId: 100 }",
  "",
].join("\n");

/** Two control planes (an even count) and a Kubernetes release Talos 1.13 does not support. */
const BROKEN_STACK = METAL_STACK.replace("1.36.3", "1.39.0").concat(
  "    - { name: cp-2, role: controlplane, platform: baremetal, baremetal: { address: 192.0.2.12 } }\n",
);

describe("validate", () => {
  let home: string;
  beforeEach(() => (home = tempDir("home-")));
  afterEach(() => {
    cleanupRepos();
    cleanupTemp();
  });

  /** A context with the real validation, a clean HOME and the given PATH. */
  const context = (root: string, env: Record<string, string> = {}) =>
    testContext({
      repoRoot: root,
      env: { HOME: home, ...env },
      validateStack: validateStackConfig,
    });
  const withPulumi = () => ({ PATH: fakeTools({ pulumi: "v3.276.0" }) });

  it("reports every config problem, every missing credential with where it was looked for, and the missing Pulumi CLI, at once", async () => {
    const root = makeRepo({
      foundation: { project: "talos-platform", stacks: { broken: BROKEN_STACK, lab: VM_STACK } },
    });
    const ctx = context(root);
    assert.equal(await runCli(["validate"], ctx), ExitCode.usage);
    const lines = ctx.stdout.text.split("\n");
    // The validation's own words (components/config); here only which keys it names.
    assert.equal(lines[0], "foundation/broken (Pulumi.broken.yaml): 2 problems");
    assert.match(lines[1], /^ {2}- cluster\.kubernetesVersion: .*1\.39/);
    assert.match(lines[2], /^ {2}- nodes: .*control planes/);
    assert.match(ctx.stdout.text, /^foundation\/lab \(Pulumi\.lab\.yaml\): 1 problem$/m);
    assert.match(
      ctx.stdout.text,
      /^ {2}- proxmoxApiToken: missing credential, the Proxmox API token \(user@realm!id=uuid\); got nothing from Bitwarden secret "proxmox-api-token" \(BWS_ACCESS_TOKEN not set\), environment variable PROXMOX_VE_API_TOKEN, or `pulumi config set --secret proxmoxApiToken`\./m,
    );
    assert.match(
      ctx.stdout.text,
      /^Pulumi CLI: not found on PATH nor in .*\.pulumi\/versions\/3\.\d+\.\d+\. Install it/m,
    );
    assert.match(
      ctx.stdout.text,
      /^validate: 0 of 2 stacks ready; 2 with problems; no usable Pulumi CLI\n$/m,
    );
    assert.equal(ctx.stderr.text, "");
  });

  it("prints the validation's warnings under a ready stack: what the newer Talos the nodes run deprecated", async () => {
    const upgraded = METAL_STACK.replace(
      "    talosVersion: v1.13.9\n",
      "    talosVersion: v1.14.1\n    configContract: v1.13.9\n    patches: { all: [{ machine: { kubelet: { extraArgs: { v: '2' } } } }] }\n",
    );
    const root = makeRepo({
      foundation: { project: "talos-platform", stacks: { metal: upgraded } },
    });
    const ctx = context(root, withPulumi());
    assert.equal(await runCli(["validate"], ctx), ExitCode.ok, ctx.stdout.text);
    assert.match(ctx.stdout.text, /^foundation\/metal \(Pulumi\.metal\.yaml\): ready to preview$/m);
    assert.match(
      ctx.stdout.text,
      /^ {4}warning: cluster\.patches\.all\[0\]: sets machine\.kubelet, which Talos 1\.14 \(cluster\.talosVersion\) has deprecated; it is valid for config contract 1\.13/m,
    );
  });

  it("exits 0 when every stack is ready: valid, its credentials found, a Pulumi CLI present", async () => {
    const root = makeRepo({
      foundation: { project: "talos-platform", stacks: { metal: METAL_STACK, lab: VM_STACK } },
    });
    const ctx = context(root, { ...withPulumi(), PROXMOX_VE_API_TOKEN: "op@pve!t=FAKE-SECRET" });
    assert.equal(await runCli(["validate"], ctx), ExitCode.ok);
    assert.match(
      ctx.stdout.text,
      /^foundation\/lab \(Pulumi\.lab\.yaml\): ready to preview\n {4}warning: cluster\.endpoint: is an example value .*\n {4}credentials: proxmoxApiToken \(environment\)$/m,
    );
    // Documentation addresses copied from an example: valid, with a warning, never a problem.
    assert.match(
      ctx.stdout.text,
      /^ {4}warning: cluster\.endpoint: is an example value \(a documentation address or MAC\), and so are nodes\[0\]\.network\.addresses\[0\], nodes\[0\]\.network\.gateway; got "192\.0\.2\.21"\. Replace the example values with your network's addresses and your machines' MACs before preview/m,
    );
    assert.match(ctx.stdout.text, /^foundation\/metal \(Pulumi\.metal\.yaml\): ready to preview$/m);
    assert.match(ctx.stdout.text, /^Pulumi CLI: 3\.276\.0 \(.*\/pulumi\)$/m);
    assert.match(ctx.stdout.text, /^validate: 2 of 2 stacks ready; ready to preview$/m);
    assert.doesNotMatch(ctx.stdout.text, /FAKE-SECRET/);
  });

  it("exits 5 when only the Pulumi CLI is missing", async () => {
    const root = makeRepo({
      foundation: { project: "talos-platform", stacks: { metal: METAL_STACK } },
    });
    const ctx = context(root, { PATH: tempDir("empty-bin-") });
    assert.equal(await runCli(["validate", "metal"], ctx), ExitCode.missingCli);
  });

  it("takes a credential stored encrypted in the stack file as present, without reading it", async () => {
    const stored = `${VM_STACK}  talos-platform:proxmoxApiToken:\n    secure: v1:not-decrypted\n`;
    const root = makeRepo({ foundation: { project: "talos-platform", stacks: { lab: stored } } });
    const ctx = context(root, withPulumi());
    assert.equal(await runCli(["validate", "lab"], ctx), ExitCode.ok);
    assert.match(ctx.stdout.text, /credentials: proxmoxApiToken \(stack\)/);
  });

  it("does not go online: a credential expected from Bitwarden is noted, and bws must be installed", async () => {
    const root = makeRepo({ foundation: { project: "talos-platform", stacks: { lab: VM_STACK } } });
    const bws = context(root, { ...withPulumi(), BWS_ACCESS_TOKEN: "0.FAKE-SECRET" });
    assert.equal(await runCli(["validate", "lab"], bws), ExitCode.usage);
    assert.match(
      bws.stdout.text,
      /^ {2}- bws: BWS_ACCESS_TOKEN is set but the Bitwarden Secrets Manager CLI is not on PATH/m,
    );
    assert.match(
      bws.stdout.text,
      /proxmoxApiToken: expected from Bitwarden secret "proxmox-api-token" \(not checked: validate works offline/,
    );
    const withBws = context(root, {
      PATH: fakeTools({ pulumi: "v3.276.0", bws: "[]" }),
      BWS_ACCESS_TOKEN: "0.FAKE-SECRET",
    });
    assert.equal(await runCli(["validate", "lab"], withBws), ExitCode.ok);
    assert.equal(withBws.bws, undefined);
  });

  it("prints the Image Factory ISO each bare-metal node boots from before up", async () => {
    const metal = METAL_STACK.concat(
      "    - { name: cp-2, role: controlplane, platform: baremetal, baremetal: { address: 192.0.2.12 } }\n",
      "    - { name: cp-3, role: controlplane, platform: baremetal, baremetal: { address: 192.0.2.13 } }\n",
    );
    const withExtensions = metal.replace(
      "    kubernetesVersion: 1.36.3\n",
      "    kubernetesVersion: 1.36.3\n    imageFactory: { platformExtensions: { baremetal: [siderolabs/qemu-guest-agent] } }\n",
    );
    const root = makeRepo({
      foundation: {
        project: "talos-platform",
        stacks: { metal, ext: withExtensions, lab: VM_STACK },
      },
    });
    const ctx = context(root, { ...withPulumi(), PROXMOX_VE_API_TOKEN: "user@pve!ci=x" });
    assert.equal(await runCli(["validate"], ctx), ExitCode.ok, ctx.stdout.text + ctx.stderr.text);
    const vanilla = "376567988ad370138ad8b2698212367b8edcb69b5fd68c80be1f2ec7d603b4ba";
    const agent = "ce4c980550dd2ab1b17bbf2b08801c7eb59418eafe8f279833297925d67c7515";
    const report = ctx.stdout.text;
    const section = (env: string) =>
      report.slice(report.indexOf(`foundation/${env} `)).split(/\n(?=\S)/)[0];
    assert.match(
      section("metal"),
      new RegExp(
        `^ {4}boot before up \\(each then waits in maintenance mode\\): cp-1, cp-2, cp-3 from https://factory\\.talos\\.dev/image/${vanilla}/v1\\.13\\.9/metal-amd64\\.iso$`,
        "m",
      ),
    );
    assert.match(
      section("ext"),
      new RegExp(
        `: cp-1, cp-2, cp-3 from https://factory\\.talos\\.dev/image/${agent}/v1\\.13\\.9/metal-amd64\\.iso$`,
        "m",
      ),
    );
    assert.doesNotMatch(section("lab"), /boot before up/, "no bare metal, no ISO");
  });

  it("hints the command that encrypts a plain-text credential with the stack's backend in front", async () => {
    const plain = VM_STACK.replace(
      "config:\n",
      "config:\n  talos-platform:proxmoxApiToken: user@pve!x=plain\n",
    );
    const root = makeRepo({ foundation: { project: "talos-platform", stacks: { lab: plain } } });
    const local = context(root, withPulumi());
    assert.equal(await runCli(["validate", "lab"], local), ExitCode.usage);
    assert.match(
      local.stdout.text,
      new RegExp(
        `proxmoxApiToken: is a credential in plain text \\(value not shown\\)\\. Run \`PULUMI_BACKEND_URL=file://${root}/\\.pulumi-state pulumi config set --secret proxmoxApiToken --stack lab\``,
      ),
    );
    // With the generated passphrase, its file too (what the CLI hands the engine).
    fs.mkdirSync(path.join(root, ".pulumi-state"), { recursive: true });
    fs.writeFileSync(path.join(root, ".pulumi-state", "passphrase"), "x\n", { mode: 0o600 });
    const withFile = context(root, withPulumi());
    await runCli(["validate", "lab"], withFile);
    assert.match(
      withFile.stdout.text,
      new RegExp(
        `Run \`PULUMI_BACKEND_URL=file://${root}/\\.pulumi-state PULUMI_CONFIG_PASSPHRASE_FILE=${root}/\\.pulumi-state/passphrase pulumi config set --secret proxmoxApiToken --stack lab\``,
      ),
    );
    // A stack file's backend; a PULUMI_BACKEND_URL of the shell is the shell's already.
    fs.writeFileSync(
      path.join(root, "Pulumi.lab.yaml"),
      plain.replace("config:\n", "config:\n  talos-platform:backend: gs://example-state\n"),
    );
    const shared = context(root, { ...withPulumi(), PULUMI_CONFIG_PASSPHRASE: "p" });
    await runCli(["validate", "lab"], shared);
    assert.match(
      shared.stdout.text,
      /Run `PULUMI_BACKEND_URL=gs:\/\/example-state pulumi config set --secret proxmoxApiToken --stack lab`/,
    );
    const fromShell = context(root, { ...withPulumi(), PULUMI_BACKEND_URL: "file:///x" });
    await runCli(["validate", "lab"], fromShell);
    assert.match(
      fromShell.stdout.text,
      /Run `pulumi config set --secret proxmoxApiToken --stack lab`/,
    );
  });

  it("reports a passphrase the shared backend needs", async () => {
    const shared = METAL_STACK.replace(
      "config:\n",
      "config:\n  talos-platform:backend: gs://example-state\n",
    );
    const root = makeRepo({ foundation: { project: "talos-platform", stacks: { metal: shared } } });
    const ctx = context(root, withPulumi());
    assert.equal(await runCli(["validate"], ctx), ExitCode.usage);
    assert.match(
      ctx.stdout.text,
      /^ {2}- secrets: the passphrase provider needs PULUMI_CONFIG_PASSPHRASE or PULUMI_CONFIG_PASSPHRASE_FILE with backend gs:\/\/example-state/m,
    );
    const withPassphrase = context(root, {
      ...withPulumi(),
      PULUMI_CONFIG_PASSPHRASE: "FAKE-SECRET",
    });
    assert.equal(await runCli(["validate"], withPassphrase), ExitCode.ok);
  });

  it("reports a stack file that is not YAML next to the others", async () => {
    const root = makeRepo({
      foundation: { project: "talos-platform", stacks: { metal: METAL_STACK, bad: "config: [\n" } },
    });
    const ctx = context(root, withPulumi());
    assert.equal(await runCli(["validate"], ctx), ExitCode.usage);
    assert.match(
      ctx.stdout.text,
      /^foundation\/bad \(Pulumi\.bad\.yaml\): 1 problem\n {2}- .*Pulumi\.bad\.yaml: could not be read as YAML/m,
    );
    assert.match(ctx.stdout.text, /^foundation\/metal \(Pulumi\.metal\.yaml\): ready to preview$/m);
  });

  it("checks each layer's stacks with that layer's validation, only the environments named", async () => {
    const root = makeRepo({
      foundation: {
        project: "talos-platform",
        stacks: { metal: METAL_STACK, other: BROKEN_STACK },
      },
      bootstrap: {
        project: "talos-platform-bootstrap",
        stacks: { metal: "config:\n  talos-platform-bootstrap:stateBucket: { name: Bad_Name }\n" },
      },
      app: { project: "talos-platform-app", stacks: { prod: "config: {}\n" } },
    });
    const ctx = context(root, withPulumi());
    assert.equal(await runCli(["validate", "metal"], ctx), ExitCode.usage);
    assert.match(
      ctx.stdout.text,
      /^bootstrap\/metal \(bootstrap\/Pulumi\.metal\.yaml\): 2 problems\n {2}- gcp: required\n {2}- stateBucket\.name: expected a bucket name/m,
    );
    assert.doesNotMatch(ctx.stdout.text, /other|app\//);
    const app = context(root, withPulumi());
    assert.equal(await runCli(["validate", "--layer", "app"], app), ExitCode.usage);
    assert.match(
      app.stdout.text,
      /^app\/prod \(app\/Pulumi\.prod\.yaml\): \d+ problems?\n {2}- openbao: required/m,
    );
  });

  it("refuses an environment no layer has, listing the known ones", async () => {
    const root = makeRepo({
      foundation: { project: "talos-platform", stacks: { metal: METAL_STACK } },
    });
    const ctx = context(root);
    assert.equal(await runCli(["validate", "nope"], ctx), ExitCode.usage);
    assert.match(
      ctx.stderr.text,
      /^environment: no stack file Pulumi\.nope\.yaml in any layer; got "nope"\. Use one of: metal/,
    );
  });

  it("takes a stack file's name for its stack, and refuses a .yml one naming the rename", async () => {
    const root = makeRepo({
      foundation: { project: "talos-platform", stacks: { metal: METAL_STACK, home: VM_STACK } },
    });
    const byFile = context(root, withPulumi());
    assert.equal(await runCli(["validate", "Pulumi.metal.yaml"], byFile), ExitCode.ok);
    assert.match(
      byFile.stdout.text,
      /^foundation\/metal \(Pulumi\.metal\.yaml\): ready to preview$/m,
    );
    assert.doesNotMatch(byFile.stdout.text, /home/);
    const byPath = context(root, withPulumi());
    assert.equal(
      await runCli(["validate", "./Pulumi.metal.yaml", "--layer", "foundation"], byPath),
      ExitCode.ok,
    );

    fs.writeFileSync(path.join(root, "Pulumi.lab.yml"), VM_STACK);
    for (const argument of ["Pulumi.lab.yml", "lab"]) {
      const yml = context(root, withPulumi());
      assert.equal(await runCli(["validate", argument], yml), ExitCode.usage, argument);
      assert.match(
        yml.stderr.text,
        /^Pulumi\.lab\.yml: Pulumi ignores stack files named \.yml.*Rename it to Pulumi\.lab\.yaml/m,
        argument,
      );
      assert.doesNotMatch(yml.stderr.text, /init/, argument);
    }
    // Every stack file checked: the .yml one is named with its rename, and counts as a problem.
    const all = context(root, withPulumi());
    assert.equal(await runCli(["validate", "--layer", "foundation"], all), ExitCode.usage);
    assert.match(all.stdout.text, /^foundation\/metal \(Pulumi\.metal\.yaml\): ready to preview$/m);
    assert.match(
      all.stdout.text,
      /^ignored: Pulumi\.lab\.yml: Pulumi ignores stack files named \.yml.*Rename it to Pulumi\.lab\.yaml/m,
    );
    const missing = context(root, withPulumi());
    assert.equal(await runCli(["validate", "Pulumi.other.yml"], missing), ExitCode.usage);
    assert.match(missing.stderr.text, /Rename the file to Pulumi\.other\.yaml.*validate other/);
  });

  it("never suggests an init of Pulumi.Pulumi.<env>.yaml.yaml: a stack file's name is a stack name", async () => {
    const root = makeRepo({
      foundation: { project: "talos-platform", stacks: { metal: METAL_STACK } },
    });
    const ctx = context(root);
    assert.equal(await runCli(["validate", "Pulumi.home.yaml"], ctx), ExitCode.usage);
    assert.match(ctx.stderr.text, /no stack file Pulumi\.home\.yaml in any layer/);
    assert.match(ctx.stderr.text, /init home --from/);
    assert.doesNotMatch(ctx.stderr.text, /Pulumi\.Pulumi/);
    const init = context(root);
    assert.equal(await runCli(["init", "Pulumi.home.yaml", "--from", "x"], init), ExitCode.usage);
    assert.match(
      init.stderr.text,
      /^environment: must be the stack name, not its stack file; got "Pulumi\.home\.yaml"\. Pass home: npm run platform -- init home --from x/m,
    );
    assert.ok(!fs.existsSync(path.join(root, "Pulumi.Pulumi.home.yaml.yaml")));
    const preview = context(root);
    assert.equal(await runCli(["preview", "Pulumi.home.yaml"], preview), ExitCode.usage);
    assert.match(preview.stderr.text, /must be the stack name, not its stack file.*Pass home/);
  });

  it("needs no engine and writes nothing", async () => {
    const root = makeRepo({ foundation: { project: "talos-platform", stacks: { lab: VM_STACK } } });
    const before = fs.readdirSync(root).sort();
    const ctx = context(root);
    await runCli(["validate"], ctx);
    assert.deepEqual(ctx.workspaces.calls, []);
    assert.deepEqual(fs.readdirSync(root).sort(), before);
  });
});

describe("finding the Pulumi CLI without the Automation API", () => {
  afterEach(cleanupTemp);

  it("accepts what the Automation API accepts and names what it does not", () => {
    const home = tempDir("home-");
    const ok = probePulumiCli({ PATH: fakeTools({ pulumi: "v3.276.0" }), HOME: home });
    assert.equal(ok.ok && ok.version, "3.276.0");
    const old = probePulumiCli({ PATH: fakeTools({ pulumi: "v2.25.0" }), HOME: home });
    assert.equal(old.ok, false);
    assert.match(
      !old.ok ? old.problem : "",
      /is version 2\.25\.0; the programs need 3\.x, at least 3\.207\.0 \(replaceWith and resource hooks\)/,
    );
    // 3.206 has resource hooks but not replaceWith, which the programs' config pushes carry.
    const preReplaceWith = probePulumiCli({ PATH: fakeTools({ pulumi: "v3.206.0" }), HOME: home });
    assert.match(
      !preReplaceWith.ok ? preReplaceWith.problem : "",
      /is version 3\.206\.0; .* at least 3\.207\.0/,
    );
    const first = probePulumiCli({ PATH: fakeTools({ pulumi: "v3.207.0" }), HOME: home });
    assert.equal(first.ok && first.version, "3.207.0");
    const installed = path.join(home, ".pulumi", "versions");
    fs.mkdirSync(installed, { recursive: true });
    const none = probePulumiCli({ PATH: "", HOME: home });
    assert.equal(none.ok, false);
  });

  it("uses the Automation API's own minimum version", () => {
    // The module has no public type; its value is what PulumiCommand.get checks against.
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const { minimumVersion } = require("@pulumi/pulumi/automation/minimumVersion");
    assert.equal(PULUMI_CLI_MINIMUM.version, minimumVersion.version);
    // The programs' own minimum is never below it, so the probe is as strict as the engine's run.
    assert.ok(semverGte(PROGRAM_CLI_MINIMUM, minimumVersion));
  });

  it("is newer than the last CLI the Automation API hands an event-log file (which a kill would leave behind)", () => {
    // setupEventLog streams the events over loopback gRPC above this version, else it tails a file
    // under os.tmpdir() that holds every event, secrets in plain text among them.
    const stack = fs.readFileSync(require.resolve("@pulumi/pulumi/automation/stack.js"), "utf8");
    const threshold = /semver\.gt\(ver, "(\d+\.\d+\.\d+)"\)\) \{\s*const eventsServer/.exec(stack);
    assert.ok(threshold, "the Automation API still chooses between a gRPC stream and a file");
    assert.ok(
      semverGt(PROGRAM_CLI_MINIMUM, threshold[1]!),
      `${PROGRAM_CLI_MINIMUM.version} > ${threshold[1]}`,
    );
  });

  it("is the minimum the README and the CLI reference give a new user", () => {
    const root = path.join(__dirname, "..", "..");
    for (const page of ["README.md", path.join("docs", "cli.md")]) {
      const text = fs.readFileSync(path.join(root, page), "utf8").replace(/\s+/g, " ");
      assert.ok(
        text.includes(`${PROGRAM_CLI_MINIMUM.version} or later`),
        `${page} names Pulumi CLI ${PROGRAM_CLI_MINIMUM.version} or later`,
      );
    }
  });
});

describe("preview and up: everything missing in one report", () => {
  afterEach(cleanupRepos);

  const broken = VM_STACK.replace("1.36.3", "1.39.0");

  it("names the config problems, the missing credentials and the missing Pulumi CLI together, and runs nothing", async () => {
    const root = makeRepo({ foundation: { project: "talos-platform", stacks: { lab: broken } } });
    for (const operation of ["preview", "up"]) {
      const ctx = testContext({ repoRoot: root, validateStack: validateStackConfig });
      ctx.workspaces.cliError = missingCliError(
        "/home/op/.pulumi/versions/3.276.0",
        new Error("spawn pulumi ENOENT"),
      );
      assert.equal(await runCli([operation, "lab"], ctx), ExitCode.usage, operation);
      const report = ctx.stderr.text;
      assert.match(report, /^foundation\/lab \(Pulumi\.lab\.yaml\): 2 problems$/m);
      assert.match(report, /^ {2}- cluster\.kubernetesVersion: /m);
      assert.match(report, /^ {2}- proxmoxApiToken: missing credential/m);
      assert.match(
        report,
        /^Pulumi CLI: not found on PATH nor in \/home\/op\/\.pulumi\/versions\/3\.276\.0; got "spawn pulumi ENOENT"\. Install it/m,
      );
      assert.match(
        report,
        new RegExp(
          `^${operation} lab: 0 of 1 stack ready; 1 with problems; no usable Pulumi CLI$`,
          "m",
        ),
      );
      assert.deepEqual(ctx.workspaces.callsOf("openStack"), []);
      assert.equal(fs.existsSync(path.join(root, ".pulumi-state")), false);
    }
  });

  it("checks the config only where the program runs: refresh and destroy work from the state", async () => {
    const root = makeRepo({ foundation: { project: "talos-platform", stacks: { lab: broken } } });
    const ctx = testContext({
      repoRoot: root,
      validateStack: validateStackConfig,
      env: { PROXMOX_VE_API_TOKEN: "op@pve!t=FAKE-SECRET" },
    });
    assert.equal(await runCli(["refresh", "lab"], ctx), ExitCode.ok);
    const preview = testContext({
      repoRoot: root,
      validateStack: validateStackConfig,
      env: { PROXMOX_VE_API_TOKEN: "op@pve!t=FAKE-SECRET" },
    });
    assert.equal(await runCli(["preview", "lab"], preview), ExitCode.usage);
    assert.match(preview.stderr.text, /Pulumi CLI: 3\.276\.0 \(pulumi\)/);
  });
});
