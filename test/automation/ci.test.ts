import { strict as assert } from "node:assert";
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { parse } from "yaml";
import { SUMMARY_MARKER } from "../../automation/summary";
import { CI_WORKFLOWS, ciEnvironments } from "../../components/app/openbao";
import { WORKFLOWS, githubEnvironment } from "../../components/gcp/ciIdentities";
import { ROOT } from "./helpers";

interface CustomManager {
  customType: string;
  managerFilePatterns: string[];
  matchStrings: string[];
  datasourceTemplate: string;
  depNameTemplate: string;
  extractVersionTemplate?: string;
}

interface Step {
  id?: string;
  name?: string;
  env?: Record<string, string>;
  uses?: string;
  run?: string;
  if?: string;
  with?: Record<string, any>;
}

interface Job {
  steps: Step[];
  "timeout-minutes"?: number;
  permissions?: Record<string, string>;
  environment?: string;
  env?: Record<string, string>;
  strategy?: { "fail-fast"?: boolean; "max-parallel"?: number; matrix?: { env?: string[] } };
}

interface Workflow {
  on: Record<string, unknown>;
  env?: Record<string, string>;
  permissions?: Record<string, string>;
  jobs: Record<string, Job>;
}

const renovate = JSON.parse(fs.readFileSync(path.join(ROOT, "renovate.json"), "utf8")) as {
  customManagers: CustomManager[];
  packageRules: { matchDepNames: string[]; automerge: boolean }[];
};

/** Renovate writes file patterns as `/regex/`. */
function filePattern(pattern: string): RegExp {
  assert.match(pattern, /^\/.*\/$/, "a regex pattern");
  return new RegExp(pattern.slice(1, -1));
}

function manager(depName: string): CustomManager {
  const found = renovate.customManagers.find((m) => m.depNameTemplate === depName);
  assert.ok(found, `a custom manager for ${depName}`);
  return found;
}

/** What a custom manager extracts from a file, as Renovate would: the currentValue groups. */
function extract(m: CustomManager, file: string, text: string): string[] {
  if (!m.managerFilePatterns.some((p) => filePattern(p).test(file))) return [];
  return m.matchStrings.flatMap((s) =>
    [...text.matchAll(new RegExp(s, "g"))].map((match) => match.groups?.currentValue ?? ""),
  );
}

function workflow(name: string): Workflow {
  return parse(fs.readFileSync(path.join(ROOT, ".github", "workflows", name), "utf8")) as Workflow;
}

const allRuns = (w: Workflow) =>
  Object.values(w.jobs)
    .flatMap((job) => job.steps)
    .map((step) => step.run ?? "")
    .join("\n");

describe("Renovate: Talos and Kubernetes versions in the stack files", () => {
  // The example stack files as written (test/fixtures/stacks), not the operator's edits of them.
  const fixtures = path.join(ROOT, "test", "fixtures", "stacks");
  const stackFiles = fs.readdirSync(fixtures).filter((f) => /^Pulumi\.[^.]+\.yaml$/.test(f));

  it("finds talosVersion in every stack file, from siderolabs/talos releases", () => {
    const talos = manager("siderolabs/talos");
    assert.equal(talos.customType, "regex");
    assert.equal(talos.datasourceTemplate, "github-releases");
    assert.ok(stackFiles.length >= 2);
    for (const file of stackFiles) {
      const text = fs.readFileSync(path.join(fixtures, file), "utf8");
      const expected = [...text.matchAll(/talosVersion: (v[\d.]+)/g)].map((m) => m[1]);
      assert.ok(expected.length > 0, file);
      assert.deepEqual(extract(talos, file, text), expected, file);
    }
  });

  it("finds kubernetesVersion from kubernetes/kubernetes releases, stripping the v of the tags", () => {
    const kubernetes = manager("kubernetes/kubernetes");
    assert.equal(kubernetes.datasourceTemplate, "github-releases");
    for (const file of stackFiles) {
      const text = fs.readFileSync(path.join(fixtures, file), "utf8");
      const expected = [...text.matchAll(/kubernetesVersion: ([\d.]+)/g)].map((m) => m[1]);
      assert.ok(expected.length > 0, file);
      assert.deepEqual(extract(kubernetes, file, text), expected, file);
    }
    const tag = new RegExp(kubernetes.extractVersionTemplate ?? "").exec("v1.37.0");
    assert.equal(tag?.groups?.version, "1.37.0");
    assert.equal(new RegExp(kubernetes.extractVersionTemplate ?? "").exec("v1.37.0-rc.1"), null);
  });

  it("looks at Pulumi.<env>.yaml at the root and one folder down, never Pulumi.yaml", () => {
    const talos = manager("siderolabs/talos");
    const matches = (file: string) =>
      talos.managerFilePatterns.some((p) => filePattern(p).test(file));
    assert.equal(matches("Pulumi.staging.yaml"), true);
    assert.equal(matches("app/Pulumi.prod.yaml"), true);
    assert.equal(matches("bootstrap/Pulumi.prod.yaml"), true);
    assert.equal(matches("Pulumi.yaml"), false);
    assert.equal(matches("a/b/Pulumi.prod.yaml"), false);
    assert.deepEqual(extract(talos, "app/Pulumi.prod.yaml", '    talosVersion: "v1.14.1"\n'), [
      "v1.14.1",
    ]);
  });

  it("never automerges a cluster version bump", () => {
    const rule = renovate.packageRules.find((r) => r.matchDepNames.includes("siderolabs/talos"));
    assert.ok(rule);
    assert.deepEqual([...rule.matchDepNames].sort(), ["kubernetes/kubernetes", "siderolabs/talos"]);
    assert.equal(rule.automerge, false);
  });
});

describe("Renovate: trust and timing", () => {
  const config = JSON.parse(fs.readFileSync(path.join(ROOT, "renovate.json"), "utf8"));

  it("waits before proposing a release and pins actions by digest", () => {
    assert.match(config.minimumReleaseAge, /^[1-9]\d* days?$/);
    assert.ok(config.extends.includes("helpers:pinGitHubActionDigests"));
  });
});

describe("GitHub Actions workflows", () => {
  const pr = workflow("pull-request.yml");
  const main = workflow("main.yml");
  const drift = workflow("drift.yml");
  const workflows = { "pull-request.yml": pr, "main.yml": main, "drift.yml": drift };
  const raw = (file: string) =>
    fs.readFileSync(path.join(ROOT, ".github", "workflows", file), "utf8");
  const cliSteps = (w: Workflow) =>
    Object.values(w.jobs)
      .flatMap((job) => job.steps)
      .filter((step) => /npm run --silent platform --/.test(step.run ?? ""));

  it("test pull requests and main with Node from .nvmrc: npm ci, then npm test (and the workflow linters on pull requests)", () => {
    for (const w of [pr, main]) {
      const test = w.jobs.test.steps;
      const node = test.find((s) => s.uses?.startsWith("actions/setup-node@"));
      assert.equal(node?.with?.["node-version-file"], ".nvmrc");
      const runs = test.map((s) => s.run).filter(Boolean);
      assert.deepEqual(
        runs,
        w === pr ? ["npm ci", "npm test", "scripts/lint-workflows.sh"] : ["npm ci", "npm test"],
      );
    }
    assert.ok("pull_request" in pr.on);
    assert.deepEqual((main.on.push as { branches: string[] }).branches, ["main"]);
  });

  it("pin every action by its full commit SHA, with the version as a comment", () => {
    for (const [file, w] of Object.entries(workflows)) {
      const uses = Object.values(w.jobs).flatMap((job) => job.steps.flatMap((s) => s.uses ?? []));
      assert.ok(uses.length > 0, file);
      for (const use of uses)
        assert.match(use, /^[\w.-]+\/[\w.-]+@[0-9a-f]{40}$/, `${file}: ${use}`);
      for (const line of raw(file)
        .split("\n")
        .filter((l) => /^\s*(- )?uses:/.test(l))) {
        assert.match(line, /@[0-9a-f]{40} # v\d+\.\d+\.\d+$/, `${file}: ${line.trim()}`);
      }
    }
  });

  it("never persist the checkout's token, bound every job's time, and grant each job its permissions explicitly", () => {
    for (const [file, w] of Object.entries(workflows)) {
      assert.deepEqual(w.permissions, { contents: "read" }, file);
      for (const [name, job] of Object.entries(w.jobs)) {
        assert.ok(
          Number.isInteger(job["timeout-minutes"]) && job["timeout-minutes"]! <= 60,
          `${file} ${name}: timeout-minutes`,
        );
        assert.ok(job.permissions, `${file} ${name}: permissions`);
        for (const step of job.steps.filter((s) => s.uses?.startsWith("actions/checkout@"))) {
          assert.equal(step.with?.["persist-credentials"], false, `${file} ${name}`);
        }
      }
    }
  });

  it("give credentials only to the step that runs the CLI, never to a job, npm ci or an installer", () => {
    for (const [file, w] of Object.entries(workflows)) {
      assert.doesNotMatch(JSON.stringify(w.env ?? {}), /secrets\.|credentials/i, file);
      for (const [name, job] of Object.entries(w.jobs)) {
        assert.doesNotMatch(
          JSON.stringify(job.env ?? {}),
          /secrets\.|credentials/i,
          `${file} ${name}`,
        );
        for (const step of job.steps) {
          const env = JSON.stringify(step.env ?? {});
          if (!/platform --/.test(step.run ?? "")) {
            assert.doesNotMatch(
              env,
              /secrets\.|GOOGLE_APPLICATION_CREDENTIALS/,
              `${file}: ${step.name ?? step.run}`,
            );
          }
          // Expressions are passed through env, never spliced into a script.
          assert.doesNotMatch(step.run ?? "", /\$\{\{/, `${file}: ${step.name ?? step.run}`);
        }
      }
      assert.doesNotMatch(
        raw(file),
        /GOOGLE_CREDENTIALS|credentials_json/,
        `${file}: no key files`,
      );
    }
  });

  it("get Google credentials by Workload Identity Federation, exported to the CLI step only, with TMPDIR the runner's temp", () => {
    for (const [file, w] of Object.entries(workflows)) {
      const job = Object.values(w.jobs).find((j) => j.environment)!;
      const auth = job.steps.find((s) => s.uses?.startsWith("google-github-actions/auth@"));
      assert.ok(auth, file);
      assert.equal(
        auth.with?.workload_identity_provider,
        "${{ vars.GCP_WORKLOAD_IDENTITY_PROVIDER }}",
      );
      assert.equal(auth.with?.export_environment_variables, false);
      assert.equal(auth.with?.service_account, undefined, "direct federation, no service account");
      assert.equal(job.permissions?.["id-token"], "write");
      const steps = cliSteps(w);
      assert.ok(steps.length > 0, file);
      for (const step of steps) {
        assert.equal(step.env?.TMPDIR, "${{ runner.temp }}", `${file}: ${step.name}`);
        assert.equal(
          step.env?.GOOGLE_APPLICATION_CREDENTIALS,
          `\${{ steps.${auth.id}.outputs.credentials_file_path }}`,
          `${file}: ${step.name}`,
        );
        assert.ok(job.steps.indexOf(auth) < job.steps.indexOf(step));
      }
      // npm ci (the branch's dependencies' scripts) runs before any credential exists.
      assert.ok(job.steps.findIndex((s) => s.run === "npm ci") < job.steps.indexOf(auth), file);
    }
  });

  it("bind the environments to the ones the bootstrap layer's identities and OpenBao's CI roles name", () => {
    for (const env of ["staging", "prod"]) {
      const expand = (template?: string) => template?.replace("${{ matrix.env }}", env);
      assert.equal(expand(pr.jobs.preview.environment), githubEnvironment("preview", env));
      assert.equal(expand(main.jobs.deploy.environment), githubEnvironment("apply", env));
      assert.equal(expand(drift.jobs.drift.environment), githubEnvironment("drift", env));
      assert.equal(expand(pr.jobs.preview.environment), ciEnvironments(env).preview);
      assert.equal(expand(main.jobs.deploy.environment), ciEnvironments(env).apply);
    }
    for (const file of Object.values(WORKFLOWS))
      assert.ok(fs.existsSync(path.join(ROOT, file)), file);
    for (const file of Object.values(CI_WORKFLOWS)) assert.ok(fs.existsSync(path.join(ROOT, file)));
    assert.deepEqual(Object.keys(main.on), ["push"]);
    assert.deepEqual(Object.keys(pr.on), ["pull_request"], "never pull_request_target");
  });

  it("run drift only from main on the runner group limited to it", () => {
    const job = drift.jobs.drift as Job & { "runs-on": unknown; if?: string };
    assert.deepEqual(job["runs-on"], {
      group: "talos-drift",
      labels: ["self-hosted", "linux", "talos-lan"],
    });
    // Opt-in (bootstrap ci.drift and this repository variable): skipped, not queued, without it.
    assert.equal(job.if, "github.ref == 'refs/heads/main' && vars.TALOS_DRIFT == 'true'");
    const actionlint = parse(
      fs.readFileSync(path.join(ROOT, ".github", "actionlint.yaml"), "utf8"),
    );
    assert.deepEqual(actionlint["self-hosted-runner"].labels, ["talos-lan"]);
  });

  it("preview the app layer for staging and prod into one summary, noting a missing app/Pulumi.yaml", () => {
    const runs = allRuns(pr);
    assert.deepEqual(pr.jobs.preview.strategy?.matrix?.env, ["staging", "prod"]);
    assert.match(
      runs,
      /npm run --silent platform -- preview "\$ENVIRONMENT" --layer app --summary preview\.md --skip-missing-layer/,
    );
    assert.equal(cliSteps(pr)[0].env?.ENVIRONMENT, "${{ matrix.env }}");
    assert.doesNotMatch(runs, /--layer (foundation|all)|platform -- (up|destroy)/);
    assert.equal(pr.jobs.preview.strategy?.["fail-fast"], false);
    assert.equal(pr.jobs.preview.strategy?.["max-parallel"], 1);
    const steps = pr.jobs.preview.steps;
    const start = steps.findIndex((st) => st.with?.script?.includes('writeFileSync("preview.md"'));
    const preview = steps.findIndex((st) => st.run?.includes("platform -- preview"));
    assert.ok(start >= 0 && start < preview, "the previous comment is the summary's start");
  });

  it("log into OpenBao with the job's OIDC token, fetched by the CLI right before each run, never a stored token", () => {
    for (const job of [pr.jobs.preview, main.jobs.deploy]) {
      assert.equal(job.permissions?.["id-token"], "write");
      assert.ok(!job.steps.some((st) => st.with?.script?.includes("getIDToken")));
    }
    assert.doesNotMatch(JSON.stringify(pr) + JSON.stringify(main), /OPENBAO_TOKEN|OPENBAO_JWT/);
  });

  it("skip, with a notice rather than a red job, the previews of pull requests that get no credentials", () => {
    const job = pr.jobs.preview;
    assert.equal(
      job.env?.TRUSTED,
      "${{ github.event.pull_request.head.repo.full_name == github.repository && github.actor != 'dependabot[bot]' && github.actor != 'renovate[bot]' }}",
    );
    const [skip, ...rest] = job.steps;
    assert.equal(skip.if, "env.TRUSTED != 'true'");
    assert.match(skip.run ?? "", /::notice title=Preview skipped::/);
    assert.match(skip.run ?? "", />> "\$GITHUB_STEP_SUMMARY"/);
    for (const step of rest) {
      assert.match(step.if ?? "", /env\.TRUSTED == 'true'/, step.name ?? step.uses);
    }
  });

  it("never give the drift check an empty passphrase: the stacks it reads use their KMS keys", () => {
    assert.doesNotMatch(JSON.stringify(drift), /PULUMI_CONFIG_PASSPHRASE/);
    for (const env of drift.jobs.drift.strategy?.matrix?.env ?? []) {
      const stack = parse(fs.readFileSync(path.join(ROOT, `Pulumi.${env}.yaml`), "utf8"));
      assert.match(stack.secretsprovider, /^gcpkms:\/\//, env);
      assert.match(stack.config["talos-platform:backend"], /^gs:\/\//, env);
    }
  });

  it("find every stack CI reads on the bootstrap layer's bucket, each encrypted with its own layer's and environment's key", () => {
    const bootstrap = parse(
      fs.readFileSync(path.join(ROOT, "bootstrap", "Pulumi.shared.yaml"), "utf8"),
    ).config;
    const bucket = `gs://${bootstrap["talos-platform-bootstrap:stateBucket"].name}`;
    const { keyRing, environments } = bootstrap["talos-platform-bootstrap:secretsKeys"];
    const project = bootstrap["talos-platform-bootstrap:gcp"].project;
    assert.deepEqual(environments, ["staging", "prod"]);
    for (const [file, key, layer, env] of [
      ["Pulumi.staging.yaml", "talos-platform:backend", "foundation", "staging"],
      ["Pulumi.prod.yaml", "talos-platform:backend", "foundation", "prod"],
      ["app/Pulumi.staging.yaml", "talos-platform-app:backend", "app", "staging"],
      ["app/Pulumi.prod.yaml", "talos-platform-app:backend", "app", "prod"],
    ]) {
      const stack = parse(fs.readFileSync(path.join(ROOT, file), "utf8"));
      assert.equal(stack.config[key], bucket, file);
      assert.match(
        stack.secretsprovider,
        new RegExp(
          `^gcpkms://projects/${project}/locations/[^/]+/keyRings/${keyRing}/cryptoKeys/${layer}-${env}$`,
        ),
        file,
      );
    }
    assert.equal(bootstrap["talos-platform-bootstrap:ciMembers"], undefined);
    assert.ok(bootstrap["talos-platform-bootstrap:ci"].repositoryId);
  });

  it("post the summary as one pull-request comment, found again by its marker line and the Actions bot only", () => {
    const steps = pr.jobs.preview.steps.filter((s) => s.uses?.startsWith("actions/github-script@"));
    const post = steps.find((s) => s.with?.script?.includes("createComment"));
    assert.ok(post?.with?.script);
    assert.match(post.if ?? "", /always\(\)/, "also after a failed preview");
    assert.match(post.with.script, /updateComment\(/);
    assert.match(post.with.script, /github\.paginate\(github\.rest\.issues\.listComments/);
    assert.equal(pr.jobs.preview.permissions?.["pull-requests"], "write");
    assert.equal(steps.length, 2);
    for (const step of steps) {
      const script = step.with!.script;
      assert.ok(script.includes(`const marker = "${SUMMARY_MARKER}";`));
      assert.ok(script.includes('comment.user?.login === "github-actions[bot]"'));
      assert.ok(script.includes('comment.user?.type === "Bot"'));
      assert.ok(script.includes('comment.body?.startsWith(marker + "\\n")'));
      assert.doesNotMatch(script, /\.includes\(marker\)/);
    }
  });

  it("install the Pulumi CLI and talosctl with the scripts that check pinned SHA-256 sums, never curl | sh", () => {
    for (const w of [pr, main, drift]) {
      assert.match(
        allRuns(w),
        /scripts\/install-pulumi\.sh "\$RUNNER_TEMP\/pulumi-cli" >> "\$GITHUB_PATH"/,
      );
      assert.doesNotMatch(allRuns(w), /curl|get\.pulumi\.com|\| *sh\b/);
    }
    assert.match(
      allRuns(drift),
      /scripts\/install-talosctl\.sh "\$ENVIRONMENT" "\$RUNNER_TEMP\/talos"/,
    );
  });

  it("apply only the app layer on main, staging before prod", () => {
    const runs = allRuns(main);
    assert.match(
      runs,
      /exec npm run --silent platform -- up "\$ENVIRONMENT" --layer app --skip-missing-layer/,
    );
    assert.doesNotMatch(runs, /--layer (foundation|bootstrap|all)/);
    const deploy = main.jobs.deploy;
    assert.deepEqual(deploy.strategy?.matrix?.env, ["staging", "prod"]);
    assert.equal(deploy.strategy?.["max-parallel"], 1);
    const node = deploy.steps.find((s) => s.uses?.startsWith("actions/setup-node@"));
    assert.equal(node?.with?.cache, undefined, "no shared dependency cache in the deploying job");
  });
});

describe("release downloads checked against pinned SHA-256 sums", () => {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "verified-download-"));
  after(() => fs.rmSync(tmp, { recursive: true, force: true }));
  // A stand-in curl on PATH that "downloads" fixed bytes, so the check runs without a network.
  const fakeBin = path.join(tmp, "bin");
  fs.mkdirSync(fakeBin);
  fs.writeFileSync(
    path.join(fakeBin, "curl"),
    '#!/usr/bin/env bash\nwhile [ $# -gt 0 ]; do [ "$1" = --output ] && out=$2; shift; done\nprintf "release bytes" > "$out"\n',
    { mode: 0o755 },
  );
  const sum = createHash("sha256").update("release bytes").digest("hex");
  const download = (checksums: string) => {
    const dir = fs.mkdtempSync(path.join(tmp, "case-"));
    fs.mkdirSync(path.join(dir, "scripts"));
    fs.copyFileSync(
      path.join(ROOT, "scripts", "verified-download.sh"),
      path.join(dir, "scripts", "verified-download.sh"),
    );
    fs.writeFileSync(path.join(dir, "scripts", "tool-checksums.txt"), checksums);
    const result = spawnSync(
      "bash",
      [
        "-c",
        ". scripts/verified-download.sh && verified_download https://example.invalid/tool tool-1.0 out",
      ],
      {
        cwd: dir,
        encoding: "utf8",
        env: { ...process.env, PATH: `${fakeBin}:${process.env.PATH}` },
      },
    );
    return { ...result, installed: fs.existsSync(path.join(dir, "out")), dir };
  };

  it("installs a file whose sum matches its pin", () => {
    const result = download(`# pins\n${sum}  tool-1.0\n`);
    assert.equal(result.status, 0, result.stderr);
    assert.equal(fs.readFileSync(path.join(result.dir, "out"), "utf8"), "release bytes");
  });

  it("refuses a file whose sum differs, and a version with no pin, leaving nothing behind", () => {
    const wrong = download(`${"0".repeat(64)}  tool-1.0\n`);
    assert.equal(wrong.status, 1);
    assert.match(
      wrong.stderr,
      /tool-1\.0 has SHA-256 [0-9a-f]{64}, scripts\/tool-checksums\.txt pins 0{64}: refused/,
    );
    assert.equal(wrong.installed, false);
    assert.deepEqual(fs.readdirSync(wrong.dir).sort(), ["scripts"]);
    const none = download(`# ${sum}  tool-1.0 (a comment is no pin)\n`);
    assert.equal(none.status, 1);
    assert.match(none.stderr, /no pinned SHA-256 for tool-1\.0 in scripts\/tool-checksums\.txt/);
    assert.equal(none.installed, false);
  });
});
