// Redaction and refusals (issue 24) as an operator meets them: each case starts the CLI as a process
// (bin/platform) with the fake `pulumi` on PATH, and checks the exit code and every byte it printed
// or wrote. They run on the repository's own foundation stack file.
import { strict as assert } from "node:assert";
import * as fs from "node:fs";
import * as path from "node:path";
import { ExitCode } from "../../automation/errors";
import { listEnvironments, resolveLayer } from "../../automation/layers";
import { PULUMI_SDK_VERSION } from "../../automation/pulumiCli";
import { FakePulumi } from "./fakePulumi";
import { ROOT } from "./helpers";
import {
  EVERY_CREDENTIAL,
  type ProcessResult,
  cleanupTemp,
  startCliProcess,
  tempDir,
} from "./process";

/** A foundation environment of the repository (the first stack file's). */
const ENV = listEnvironments(resolveLayer(ROOT, "foundation"))[0] ?? "staging";

const KUBECONFIG = "apiVersion: v1\nkind: Config\nclusters: []\n";

describe("redaction and refusals on the command line", function () {
  this.timeout(1_200_000);
  const results = new Map<string, ProcessResult>();
  let fake: FakePulumi;
  let summary: string;
  let existing: string;
  let link: string;
  let forced: string;

  before(async function () {
    if (listEnvironments(resolveLayer(ROOT, "foundation")).length === 0) this.skip();
    // Made here, not when the file loads: other files' `after` hooks clean every temporary folder.
    fake = new FakePulumi();
    const folder = tempDir("hardening-");
    summary = path.join(folder, "preview.md");
    existing = path.join(folder, "other-cluster.kubeconfig");
    link = path.join(folder, "link.kubeconfig");
    const same = path.join(folder, "same.kubeconfig");
    forced = path.join(folder, "forced.kubeconfig");
    fake.addStack(ENV);
    fs.writeFileSync(existing, "the other cluster's context\n");
    fs.writeFileSync(forced, "the other cluster's context\n");
    fs.writeFileSync(same, KUBECONFIG);
    fs.symlinkSync(existing, link);
    const engine = {
      ...EVERY_CREDENTIAL,
      PATH: `${path.join(fake.dir, "bin")}:/usr/bin:/bin`,
      HOME: tempDir("home-"),
      PULUMI_BACKEND_URL: `file://${tempDir("state-")}`,
      // At least the Automation API's minimum, which the CLI checks on PATH.
      FAKE_PULUMI_VERSION: `v${PULUMI_SDK_VERSION}`,
      FAKE_PULUMI_OUTPUTS: JSON.stringify({ kubeconfig: KUBECONFIG }),
    };
    const leaking = { ...engine, FAKE_PULUMI_LEAK_SECRETS: "1" };
    const withPassword = { ...engine, PULUMI_BACKEND_URL: "postgres://ops:hunter2-pass@db/state" };
    const withToken = { ...engine, PULUMI_BACKEND_URL: "https://state.example/?token=tok-1234567" };
    const kubeconfig = (out: string, ...rest: string[]) => [
      "kubeconfig",
      ENV,
      "--out",
      out,
      ...rest,
    ];
    const cases: Record<string, [readonly string[], Record<string, string>]> = {
      leak: [["preview", ENV, "--summary", summary], leaking],
      stacksPassword: [["stacks"], withPassword],
      validatePassword: [["validate", ENV, "--layer", "foundation"], withPassword],
      previewToken: [["preview", ENV], withToken],
      ciRefresh: [["refresh", ENV], { ...engine, CI: "true" }],
      existing: [kubeconfig(existing), engine],
      same: [kubeconfig(same), engine],
      forced: [kubeconfig(forced, "--force"), engine],
      symlink: [kubeconfig(link, "--force"), engine],
      device: [kubeconfig("/dev/null", "--force"), engine],
      notFolder: [kubeconfig(path.join(existing, "sub", "x.kubeconfig")), engine],
      control: [["validate", "sta\u001b[2Jging"], engine],
    };
    const queue = Object.entries(cases);
    const worker = async () => {
      for (let next = queue.shift(); next; next = queue.shift()) {
        const [name, [argv, env]] = next;
        results.set(name, await startCliProcess(argv, env));
      }
    };
    await Promise.all([worker(), worker()]);
  });
  after(() => {
    fake?.remove();
    cleanupTemp();
  });

  const result = (name: string) => results.get(name)!;
  const everything = ({ stdout, stderr }: ProcessResult) => `${stdout}\n${stderr}`;

  it("replaces every credential value in the engine's diagnostics, errors and the --summary Markdown", () => {
    const run = result("leak");
    assert.equal(run.status, ExitCode.failed, everything(run));
    const markdown = fs.readFileSync(summary, "utf8");
    // The engine did quote them: the redacted text shows where.
    assert.match(run.stderr, /401 Unauthorized: value \[secret\] \(json "\[secret\]"\)/);
    assert.match(markdown, /\[secret\]/);
    for (const [name, value] of Object.entries(EVERY_CREDENTIAL)) {
      for (const text of [run.stdout, run.stderr, markdown]) {
        assert.ok(!text.includes(value), `${name} printed or written`);
        assert.ok(!text.includes(JSON.stringify(value).slice(1, -1)), `${name} (JSON) printed`);
      }
    }
    assert.doesNotMatch(everything(run) + markdown, /FAKE-SECRET/);
  });

  it("starts no process with the shell's credential variables: not the Pulumi CLI, not its plugins", () => {
    const calls = fake.calls();
    assert.ok(
      calls.some((c) => c.args[0] === "preview"),
      "the engine ran",
    );
    for (const call of calls) {
      // PROXMOX_VE_API_TOKEN and BWS_ACCESS_TOKEN were in the CLI's environment (EVERY_CREDENTIAL).
      assert.ok(!call.env.PROXMOX_VE_API_TOKEN, `pulumi ${call.args.join(" ")}`);
      assert.ok(!call.env.BWS_ACCESS_TOKEN, `pulumi ${call.args.join(" ")}`);
    }
  });

  it("refuses a backend URL with a password or a token, wherever it is printed, and never shows it", () => {
    for (const name of ["stacksPassword", "validatePassword"]) {
      const run = result(name);
      assert.equal(run.status, ExitCode.usage, `${name}: ${everything(run)}`);
      assert.match(
        everything(run),
        /backend \(PULUMI_BACKEND_URL\): must not carry a credential in its URL, and it holds a user:password; got "postgres:\/\/\*\*\*:\*\*\*@db\/state"/,
      );
      assert.doesNotMatch(everything(run), /hunter2/);
    }
    const token = result("previewToken");
    assert.equal(token.status, ExitCode.usage, everything(token));
    assert.match(
      token.stderr,
      /holds a token parameter; got "https:\/\/state\.example\/\?token=\*\*\*"/,
    );
    assert.doesNotMatch(everything(token), /tok-1234567/);
    // (The fake records the environment it inherited; only `pulumi version` ran with it.)
    const engineCalls = fake.calls().filter((call) => call.args[0] !== "version");
    assert.ok(
      !engineCalls.some((call) => /hunter2|tok-1234567/.test(call.env.PULUMI_BACKEND_URL ?? "")),
    );
  });

  it("refuses `refresh` of the foundation in CI (exit 3) before the engine runs", () => {
    const run = result("ciRefresh");
    assert.equal(run.status, ExitCode.refused, everything(run));
    assert.match(
      run.stderr,
      new RegExp(`^refresh foundation/${ENV}: the foundation layer is not applied from CI`),
    );
  });

  it("kubeconfig --out: refuses an existing file with other content without --force, replaces it with", () => {
    const refused = result("existing");
    assert.equal(refused.status, ExitCode.usage, everything(refused));
    assert.match(
      refused.stderr,
      /already exists with other content .*rerun with --force to replace it/,
    );
    assert.equal(fs.readFileSync(existing, "utf8"), "the other cluster's context\n");
    assert.equal(result("same").status, ExitCode.ok, everything(result("same")));
    assert.equal(result("forced").status, ExitCode.ok, everything(result("forced")));
    assert.equal(fs.readFileSync(forced, "utf8"), KUBECONFIG);
  });

  it("kubeconfig --out: refuses a symbolic link or a device even with --force", () => {
    for (const [name, kind] of [
      ["symlink", "a symbolic link"],
      ["device", "a device, socket or pipe"],
    ]) {
      const run = result(name);
      assert.equal(run.status, ExitCode.usage, `${name}: ${everything(run)}`);
      assert.match(run.stderr, new RegExp(`must be a regular file .*; got ${kind}\\.`));
    }
    assert.equal(fs.readFileSync(existing, "utf8"), "the other cluster's context\n");
    assert.ok(fs.lstatSync(link).isSymbolicLink());
  });

  it("a filesystem error is the operator's problem naming the path, exit 2, not an unexpected error", () => {
    const run = result("notFolder");
    assert.equal(run.status, ExitCode.usage, everything(run));
    assert.match(
      run.stderr,
      /other-cluster\.kubeconfig\/sub\/x\.kubeconfig: could not be used \(lstat\); got ENOTDIR\./,
    );
    assert.doesNotMatch(run.stderr, /unexpected error/);
  });

  it("refuses an argument with a control character and prints it escaped", () => {
    const run = result("control");
    assert.equal(run.status, ExitCode.usage, everything(run));
    assert.match(run.stderr, /an argument holds a control character; got "sta\\u001b\[2Jging"/);
    assert.ok(!everything(run).includes("\u001b"), "no raw escape printed");
  });
});
