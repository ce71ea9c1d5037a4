// The CLI as an operator meets it: each case starts `automation/main.ts` as a process with its own
// arguments and environment (all at once, before the checks), and the tests check the exit code and
// what was printed. They run on the repository's own stack files and hold for any valid edit of them.
import { strict as assert } from "node:assert";
import * as fs from "node:fs";
import * as path from "node:path";
import { ExitCode } from "../../automation/errors";
import { LAYER_NAMES, layerExists, listEnvironments, resolveLayer } from "../../automation/layers";
import { ROOT } from "./helpers";
import {
  EVERY_CREDENTIAL,
  type ProcessResult,
  cleanupTemp,
  fakeTools,
  startCliProcess,
  tempDir,
} from "./process";

/** A foundation environment of the repository (the first stack file's). */
const ENV = listEnvironments(resolveLayer(ROOT, "foundation"))[0] ?? "staging";

describe("the command line", function () {
  // Each process loads the CLI through ts-node; on a busy machine that takes a while.
  this.timeout(1_200_000);
  const results = new Map<string, ProcessResult>();
  const folder = tempDir("summary-");
  const snapshot = path.join(tempDir("snapshot-"), "db.snapshot");

  before(async function () {
    if (listEnvironments(resolveLayer(ROOT, "foundation")).length === 0) this.skip();
    fs.writeFileSync(snapshot, "snapshot");
    // No Pulumi CLI, no credentials, a home of its own.
    const bare = { PATH: tempDir("bin-"), HOME: tempDir("home-") };
    const ready = { ...EVERY_CREDENTIAL, PATH: fakeTools({ pulumi: "v3.276.0" }), HOME: bare.HOME };
    const ci = { ...bare, CI: "true" };
    const cases: Record<string, [readonly string[], Record<string, string>]> = {
      ready: [["validate"], ready],
      noCli: [["validate", ENV, "--layer", "foundation"], bare],
      unknownEnv: [["validate", "no-such-env"], bare],
      summaryFolder: [["preview", ENV, "--summary", folder], bare],
      upgradeEnv: [["upgrade", ENV, "--to", "v1.14.1"], bare],
      etcdBackup: [["etcd", "backup", ENV], bare],
      missingTo: [["upgrade", "talos", ENV], bare],
      preflightVersion: [["preflight", ENV, "--talos", "1.14"], bare],
      ciUpgrade: [["upgrade", "talos", ENV, "--to", "v1.14.1"], ci],
      ciRestore: [["etcd", "restore", ENV, "--from", snapshot, "--yes"], ci],
      ciRollout: [["rollout", ENV], ci],
      unknownNode: [["replace-node", ENV, "no-such-node"], bare],
      initNoFile: [["init", "no-such-env"], bare],
    };
    // Two at a time: one per core of a small machine, without starving either.
    const queue = Object.entries(cases);
    const worker = async () => {
      for (let next = queue.shift(); next; next = queue.shift()) {
        const [name, [argv, env]] = next;
        results.set(name, await startCliProcess(argv, env));
      }
    };
    await Promise.all([worker(), worker()]);
  });
  after(cleanupTemp);

  const result = (name: string) => results.get(name)!;

  it("validate: every stack file of the repository is ready to preview, given its credentials and a Pulumi CLI", () => {
    const { status, stdout, stderr } = result("ready");
    assert.equal(status, ExitCode.ok, stdout + stderr);
    for (const name of LAYER_NAMES.filter((layer) => layerExists(ROOT, layer))) {
      for (const env of listEnvironments(resolveLayer(ROOT, name))) {
        assert.match(stdout, new RegExp(`^${name}/${env} \\(.*\\): ready to preview$`, "m"));
      }
    }
    assert.match(stdout, /^Pulumi CLI: 3\.276\.0 /m);
    assert.doesNotMatch(stdout + stderr, /FAKE-SECRET/);
  });

  it("validate: without a Pulumi CLI the report says so and the exit code is not 0", () => {
    const { status, stdout } = result("noCli");
    assert.notEqual(status, ExitCode.ok);
    assert.match(stdout, /^Pulumi CLI: not found on PATH nor in .*\. Install it/m);
    assert.match(stdout, /^validate: \d of 1 stack ready; .*no usable Pulumi CLI$/m);
  });

  it("validate: an unknown environment is a usage error listing the known ones", () => {
    const { status, stderr } = result("unknownEnv");
    assert.equal(status, ExitCode.usage);
    assert.match(
      stderr,
      /^environment: no stack file Pulumi\.no-such-env\.yaml in any layer; got "no-such-env"\. Use one of: /,
    );
  });

  it("--summary naming a folder is a usage error before anything runs", () => {
    const { status, stderr } = result("summaryFolder");
    assert.equal(status, ExitCode.usage);
    assert.equal(
      stderr,
      `--summary: must name a file, not a folder; got ${JSON.stringify(folder)}. Name a file in it, e.g. --summary ${path.join(folder, "preview.md")}\n`,
    );
  });

  it("`upgrade <env>` says what is missing: talos or kubernetes", () => {
    const { status, stderr } = result("upgradeEnv");
    assert.equal(status, ExitCode.usage);
    assert.equal(
      stderr,
      `error: unknown command '${ENV}'\n(run \`npm run platform -- upgrade --help\` for usage)\n` +
        `hint: upgrade needs what to upgrade first: \`npm run platform -- upgrade talos ${ENV} --to v1.14.1\`\n`,
    );
  });

  it("`etcd backup` gets a did-you-mean", () => {
    const { status, stderr } = result("etcdBackup");
    assert.equal(status, ExitCode.usage);
    assert.match(
      stderr,
      new RegExp(`^hint: did you mean \`npm run platform -- etcd snapshot ${ENV}\`\\?$`, "m"),
    );
  });

  it("a usage error points at the subcommand's own --help", () => {
    const { status, stderr } = result("missingTo");
    assert.equal(status, ExitCode.usage);
    assert.equal(
      stderr,
      "error: required option '--to <version>' not specified\n(run `npm run platform -- upgrade talos --help` for usage)\n",
    );
  });

  it("preflight's version error names --talos, its own flag", () => {
    const { status, stderr } = result("preflightVersion");
    assert.equal(status, ExitCode.usage);
    assert.equal(
      stderr,
      '--talos: must be a Talos version like v1.14.1; got "1.14". Give the exact release, e.g. --talos v1.14.1\n',
    );
  });

  it("with CI set, upgrade talos, etcd restore and rollout are refused like up, before anything else", () => {
    for (const name of ["ciUpgrade", "ciRestore", "ciRollout"]) {
      const { status, stderr } = result(name);
      assert.equal(status, ExitCode.refused, name);
      assert.match(
        stderr,
        /changes the running cluster and is not run from CI \(.*\); got CI="true"\. Run it from a workstation/,
      );
    }
  });

  it("a day-two command checks its arguments before the lock and the Pulumi CLI", () => {
    const { status, stderr } = result("unknownNode");
    assert.equal(status, ExitCode.usage);
    assert.match(
      stderr,
      /^replace-node: no node of that name in Pulumi\.[^ ]+\.yaml; got "no-such-node"\. Use one of: /,
    );
    assert.doesNotMatch(stderr, /Pulumi CLI/);
  });

  it("init without a stack file points at the examples, and writes nothing", () => {
    const { status, stderr } = result("initNoFile");
    assert.equal(status, ExitCode.usage);
    assert.match(
      stderr,
      /^environment: no stack file Pulumi\.no-such-env\.yaml in the foundation layer \(\.\) to create the stack from; got "no-such-env"\. Start from an example: npm run platform -- init no-such-env --from </,
    );
    assert.equal(fs.existsSync(path.join(ROOT, "Pulumi.no-such-env.yaml")), false);
  });
});
