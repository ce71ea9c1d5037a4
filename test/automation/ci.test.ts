import { strict as assert } from "node:assert";
import * as fs from "node:fs";
import * as path from "node:path";
import { parse } from "yaml";
import { SUMMARY_MARKER } from "../../automation/summary";
import { CI_WORKFLOWS, ciEnvironments } from "../../components/app/openbao";
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
  name?: string;
  uses?: string;
  run?: string;
  if?: string;
  with?: Record<string, string>;
}

interface Job {
  steps: Step[];
  permissions?: Record<string, string>;
  environment?: string;
  env?: Record<string, string>;
  strategy?: { "fail-fast"?: boolean; "max-parallel"?: number; matrix?: { env?: string[] } };
}

interface Workflow {
  on: Record<string, unknown>;
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

describe("GitHub Actions workflows", () => {
  const pr = workflow("pull-request.yml");
  const main = workflow("main.yml");

  it("test pull requests and main with Node from .nvmrc: npm ci, then npm test", () => {
    for (const w of [pr, main]) {
      const test = w.jobs.test.steps;
      const node = test.find((s) => s.uses?.startsWith("actions/setup-node@"));
      assert.equal(node?.with?.["node-version-file"], ".nvmrc");
      const runs = test.map((s) => s.run).filter(Boolean);
      assert.deepEqual(runs, ["npm ci", "npm test"]);
    }
    assert.ok("pull_request" in pr.on);
    assert.deepEqual((main.on.push as { branches: string[] }).branches, ["main"]);
  });

  it("preview the app layer for staging and prod into one summary, noting a missing app/Pulumi.yaml", () => {
    const runs = allRuns(pr);
    assert.deepEqual(pr.jobs.preview.strategy?.matrix?.env, ["staging", "prod"]);
    assert.match(
      runs,
      /npm run --silent platform -- preview "\$\{\{ matrix\.env \}\}" --layer app --summary preview\.md --skip-missing-layer/,
    );
    assert.doesNotMatch(runs, /--layer (foundation|all)|platform -- (up|destroy)/);
    // Both environments, even when the first fails; one at a time, as both update one comment,
    // each starting from the comment's sections.
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
      // A token fetched in an earlier step would be stale by the second environment.
      assert.ok(!job.steps.some((st) => st.with?.script?.includes("getIDToken")));
    }
    assert.doesNotMatch(JSON.stringify(pr) + JSON.stringify(main), /OPENBAO_TOKEN|OPENBAO_JWT/);
  });

  it("keep every secret in a GitHub environment, the ones OpenBao's CI roles are bound to", () => {
    const drift = workflow("drift.yml");
    for (const [file, w] of [
      ["pull-request.yml", pr],
      ["main.yml", main],
      ["drift.yml", drift],
    ] as const) {
      for (const [name, job] of Object.entries(w.jobs)) {
        if (!JSON.stringify(job).includes("secrets.")) continue;
        assert.ok(job.environment, `${file} ${name} reads secrets, so it runs in an environment`);
      }
    }
    assert.ok(!JSON.stringify(pr.jobs.test).includes("secrets."));
    // components/app/openbao.ts binds ci-preview to preview-<stack> and pull-request.yml, ci-apply
    // to <stack> and main.yml on the main branch.
    for (const env of ["staging", "prod"]) {
      const expand = (template?: string) => template?.replace("${{ matrix.env }}", env);
      assert.equal(expand(pr.jobs.preview.environment), ciEnvironments(env).preview);
      assert.equal(expand(main.jobs.deploy.environment), ciEnvironments(env).apply);
    }
    for (const file of Object.values(CI_WORKFLOWS)) assert.ok(fs.existsSync(path.join(ROOT, file)));
    assert.deepEqual(Object.keys(main.on), ["push"]);
    assert.deepEqual(Object.keys(pr.on), ["pull_request"], "never pull_request_target");
  });

  it("skip, with a notice rather than a red job, the previews of pull requests that get no secrets", () => {
    const job = pr.jobs.preview;
    assert.equal(
      job.env?.TRUSTED,
      "${{ github.event.pull_request.head.repo.full_name == github.repository && github.actor != 'dependabot[bot]' }}",
    );
    const [skip, ...rest] = job.steps;
    assert.equal(skip.if, "env.TRUSTED != 'true'");
    assert.match(skip.run ?? "", /::notice title=Preview skipped::/);
    assert.match(skip.run ?? "", />> "\$GITHUB_STEP_SUMMARY"/);
    for (const step of rest) {
      assert.match(step.if ?? "", /env\.TRUSTED == 'true'/, step.name ?? step.uses);
    }
  });

  it("never give the drift check an empty passphrase: the stacks it reads use the KMS key", () => {
    const drift = workflow("drift.yml");
    assert.doesNotMatch(JSON.stringify(drift), /PULUMI_CONFIG_PASSPHRASE/);
    for (const env of drift.jobs.drift.strategy?.matrix?.env ?? []) {
      const stack = parse(fs.readFileSync(path.join(ROOT, `Pulumi.${env}.yaml`), "utf8"));
      assert.match(stack.secretsprovider, /^gcpkms:\/\//, env);
      assert.match(stack.config["talos-platform:backend"], /^gs:\/\//, env);
    }
  });

  it("find every stack CI reads on the bootstrap layer's bucket, encrypted with its key", () => {
    const bootstrap = parse(
      fs.readFileSync(path.join(ROOT, "bootstrap", "Pulumi.shared.yaml"), "utf8"),
    ).config;
    const bucket = `gs://${bootstrap["talos-platform-bootstrap:stateBucket"].name}`;
    const { keyRing, cryptoKey } = bootstrap["talos-platform-bootstrap:secretsKey"];
    const project = bootstrap["talos-platform-bootstrap:gcp"].project;
    for (const [file, key] of [
      ["Pulumi.staging.yaml", "talos-platform:backend"],
      ["Pulumi.prod.yaml", "talos-platform:backend"],
      ["app/Pulumi.staging.yaml", "talos-platform-app:backend"],
      ["app/Pulumi.prod.yaml", "talos-platform-app:backend"],
    ]) {
      const stack = parse(fs.readFileSync(path.join(ROOT, file), "utf8"));
      assert.equal(stack.config[key], bucket, file);
      assert.match(
        stack.secretsprovider,
        new RegExp(
          `^gcpkms://projects/${project}/locations/[^/]+/keyRings/${keyRing}/cryptoKeys/${cryptoKey}$`,
        ),
        file,
      );
    }
    assert.ok(bootstrap["talos-platform-bootstrap:ciMembers"].length > 0, "CI may use them");
  });

  it("post the summary as one pull-request comment, found again by its hidden marker and updated", () => {
    const post = pr.jobs.preview.steps.find(
      (s) =>
        s.uses?.startsWith("actions/github-script@") && s.with?.script?.includes("createComment"),
    );
    assert.ok(post?.with?.script);
    assert.match(post.if ?? "", /always\(\)/, "also after a failed preview");
    assert.ok(post.with.script.includes(`const marker = "${SUMMARY_MARKER}";`));
    assert.match(post.with.script, /updateComment\(/);
    assert.match(post.with.script, /createComment\(/);
    assert.match(post.with.script, /github\.paginate\(github\.rest\.issues\.listComments/);
    assert.equal(pr.jobs.preview.permissions?.["pull-requests"], "write");
  });

  it("install the Pulumi CLI of the SDK's version with the official installer", () => {
    for (const w of [pr, main]) {
      assert.match(
        allRuns(w),
        /curl -fsSL https:\/\/get\.pulumi\.com \| sh -s -- --version "\$version"/,
      );
      assert.match(allRuns(w), /require\("@pulumi\/pulumi\/version"\)\.version/);
    }
  });

  it("apply only the app layer on main, staging before prod", () => {
    const runs = allRuns(main);
    assert.match(
      runs,
      /npm run --silent platform -- up "\$\{\{ matrix\.env \}\}" --layer app --skip-missing-layer/,
    );
    assert.doesNotMatch(runs, /--layer (foundation|bootstrap|all)/);
    const deploy = main.jobs.deploy as unknown as {
      strategy: { "max-parallel": number; matrix: { env: string[] } };
    };
    assert.deepEqual(deploy.strategy.matrix.env, ["staging", "prod"]);
    assert.equal(deploy.strategy["max-parallel"], 1);
  });

  it("pass secrets to the engine through the environment, never on the command line", () => {
    for (const w of [pr, main]) {
      assert.doesNotMatch(allRuns(w), /secrets\./);
      const text = fs.readFileSync(
        path.join(ROOT, ".github", "workflows", w === pr ? "pull-request.yml" : "main.yml"),
        "utf8",
      );
      assert.match(text, /GOOGLE_CREDENTIALS: \$\{\{ secrets\.GOOGLE_CREDENTIALS \}\}/);
    }
  });
});
