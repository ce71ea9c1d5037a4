// The app layer's program (components/app.ts): OpenBao's policies, auth and mounts, CI's access,
// Grafana, all from the foundation's outputs. Its stack file's rules: test/config/app.test.ts.
import { strict as assert } from "node:assert";
import { readFileSync } from "node:fs";
import * as path from "node:path";
import { CRITICAL_TYPES } from "../automation/critical";
import { StackConfigError } from "../components/config/problems";
import { withRunSecrets } from "./setup/runSecrets";
import { readStackFile, resolveAll, ROOT, setupRun } from "./harness";
import { Recorder } from "./mocks";

const PROJECT = "talos-platform-app";
const FOUNDATION = {
  clusterName: "staging",
  endpoint: "https://api.staging.example.net:6443",
  kubernetesCaCertificate: "-----BEGIN CERTIFICATE-----\nK8S CA\n-----END CERTIFICATE-----\n",
  kubeconfig: "FAKE-SECRET-kubeconfig",
};
const TOKENS = {
  openbaoToken: "FAKE-SECRET-openbao-token",
  grafanaAuth: "FAKE-SECRET-grafana-token",
};

/** Runs the app program over a stack file of the repository with the foundation's outputs given. */
async function runApp(
  options: {
    stack?: string;
    values?: Record<string, unknown>;
    secrets?: Record<string, string>;
    /** The foundation's outputs; `null`: a stack with none yet; `"missing"`: no such stack. */
    foundation?: Record<string, unknown> | null | "missing";
    recorder?: Recorder;
  } = {},
) {
  const stack = options.stack ?? "staging";
  const recorder = options.recorder ?? new Recorder();
  const foundationOutputs = options.foundation === null ? {} : (options.foundation ?? FOUNDATION);
  recorder.behaviour.stackOutputs =
    foundationOutputs === "missing"
      ? {}
      : { [`organization/talos-platform/${stack}`]: foundationOutputs };
  await setupRun(options.values ?? readStackFile(stack, "app", PROJECT), {
    recorder,
    project: PROJECT,
    stack,
    secrets: options.secrets ?? TOKENS,
  });
  const { appLayer } = await import("../components/app");
  const outputs = await appLayer();
  const resolved = await resolveAll(outputs);
  await recorder.settled();
  return { recorder, resolved };
}

/** Vault (OpenBao) and Grafana registrations, providers included. */
const openbaoOrGrafana = (recorder: Recorder) =>
  recorder.resources.filter((r) =>
    /^(vault|grafana):|^pulumi:providers:(vault|grafana)$/.test(r.type),
  );

describe("app layer", () => {
  let recorder: Recorder;
  let resolved: any;
  before(async () => ({ recorder, resolved } = await runApp()));

  it("reads the foundation's outputs through a stack reference on the same backend", () => {
    const [reference] = recorder.ofType("pulumi:pulumi:StackReference");
    assert.equal(reference.inputs.name, "organization/talos-platform/staging");
    assert.equal(resolved.foundationStack, "organization/talos-platform/staging");
  });

  it("binds the Kubernetes auth backend to the cluster's API and CA from the foundation", () => {
    const [backend] = recorder.ofType("vault:index/authBackend:AuthBackend");
    assert.deepEqual([backend.inputs.type, backend.inputs.path], ["kubernetes", "kubernetes"]);
    const [config] = recorder.ofType("vault:kubernetes/authBackendConfig:AuthBackendConfig");
    assert.equal(config.inputs.kubernetesHost, FOUNDATION.endpoint);
    assert.equal(config.inputs.kubernetesCaCert, FOUNDATION.kubernetesCaCertificate);
  });

  it("renders one policy per file in app/policies with the stack's KV mount, and CI's two generated ones", () => {
    const policies = recorder
      .ofType("vault:index/policy:Policy")
      .map((p) => p.inputs.name)
      .sort();
    assert.deepEqual(policies, ["ci-apply", "ci-preview", "external-secrets"]);
    const external = recorder
      .ofType("vault:index/policy:Policy")
      .find((p) => p.inputs.name === "external-secrets")!;
    const file = readFileSync(path.join(ROOT, "app", "policies", "external-secrets.hcl"), "utf8");
    assert.match(file, /path "\$\{kvMount\}\/data\/apps\/\*"/);
    assert.equal(external.inputs.policy, file.replace(/\$\{kvMount\}/g, "secret"));
    assert.deepEqual(resolved.openbao.policies, ["external-secrets", "ci-apply", "ci-preview"]);
  });

  it("writes the external-secrets policy for the KV mount the stack configures", async () => {
    const values = readStackFile("staging", "app", PROJECT) as any;
    values.openbao.kvMount = "apps-kv";
    const { recorder: r } = await runApp({ values });
    const external = r
      .ofType("vault:index/policy:Policy")
      .find((p) => p.inputs.name === "external-secrets")!;
    assert.match(external.inputs.policy, /path "apps-kv\/data\/apps\/\*"/);
    assert.doesNotMatch(external.inputs.policy, /secret\/|\$\{/);
    assert.equal(r.ofType("vault:index/mount:Mount")[0].inputs.path, "apps-kv");
  });

  /** path → capabilities of a generated policy; every `path` block must parse. */
  const policyRules = (hcl: string): Record<string, string[]> => {
    const blocks = [...hcl.matchAll(/path "([^"]+)" \{\n {2}capabilities = \[([^\]]*)\]\n\}/g)];
    assert.equal(blocks.length, hcl.match(/^path /gm)?.length, "every path block parsed");
    return Object.fromEntries(
      blocks.map((m) => [m[1], m[2].split(", ").map((c) => JSON.parse(c) as string)]),
    );
  };
  const generated = (r: Recorder, name: string) =>
    policyRules(
      r.ofType("vault:index/policy:Policy").find((p) => p.inputs.name === name)!.inputs
        .policy as string,
    );

  it("lets CI read every OpenBao resource of the app layer, path by path, and change none", () => {
    const expected = {
      "sys/policies/acl/external-secrets": ["read"],
      "sys/policies/acl/ci-apply": ["read"],
      "sys/policies/acl/ci-preview": ["read"],
      // OpenBao asks sudo for every sys/auth/ path (PathsSpecial.Root "auth/*"), reads included.
      "sys/auth/kubernetes": ["read", "sudo"],
      "sys/mounts/auth/kubernetes/tune": ["read"],
      "auth/kubernetes/config": ["read"],
      "auth/kubernetes/role/*": ["read"],
      "sys/mounts/secret": ["read"],
      "sys/auth/jwt-github": ["read", "sudo"],
      "sys/mounts/auth/jwt-github/tune": ["read"],
      "auth/jwt-github/config": ["read"],
      "auth/jwt-github/role/*": ["read"],
    };
    assert.deepEqual(generated(recorder, "ci-apply"), expected);
    assert.deepEqual(generated(recorder, "ci-preview"), expected);
  });

  // What would widen a token's rights, and so is an operator's to apply: ci-apply may not.
  for (const [what, path] of [
    ["rewrite an app policy's body", "sys/policies/acl/external-secrets"],
    ["rewrite its own policy", "sys/policies/acl/ci-apply"],
    ["write a Kubernetes auth role (any token_policies)", "auth/kubernetes/role/external-secrets"],
    ["repoint the Kubernetes auth config at another host", "auth/kubernetes/config"],
    ["tune the Kubernetes auth method", "sys/mounts/auth/kubernetes/tune"],
    ["tune it through sys/auth", "sys/auth/kubernetes/tune"],
    ["enable or disable the Kubernetes auth method", "sys/auth/kubernetes"],
    ["enable or remove the KV mount", "sys/mounts/secret"],
    ["tune the KV mount", "sys/mounts/secret/tune"],
    ["write its own JWT roles", "auth/jwt-github/role/ci-apply"],
    ["reconfigure its own JWT auth method", "auth/jwt-github/config"],
    ["tune its own JWT auth method", "sys/mounts/auth/jwt-github/tune"],
  ]) {
    it(`does not let ci-apply ${what} (${path})`, () => {
      const rules = generated(recorder, "ci-apply");
      // The rule that would govern the path: the exact one, else the `*` one of its folder.
      const rule = rules[path] ?? rules[path.replace(/[^/]+$/, "*")] ?? [];
      assert.deepEqual(
        rule.filter((c) => !["read", "sudo"].includes(c)),
        [],
        `${path}: ${rule.join(", ")}`,
      );
    });
  }

  it("follows the stack's paths and policies, with no glob over mounts, auth methods or policies", async () => {
    const values = readStackFile("staging", "app", PROJECT) as any;
    values.openbao.kubernetesAuthPath = "k8s-apps";
    values.openbao.kvMount = "apps-kv";
    values.openbao.policies = { reader: 'path "apps-kv/data/x" { capabilities = ["read"] }' };
    const { recorder: r } = await runApp({ values });
    const rules = generated(r, "ci-apply");
    assert.deepEqual(generated(r, "ci-preview"), rules);
    for (const path of [
      "sys/policies/acl/reader",
      "sys/auth/k8s-apps",
      "sys/mounts/auth/k8s-apps/tune",
      "auth/k8s-apps/config",
      "auth/k8s-apps/role/*",
      "sys/mounts/apps-kv",
    ]) {
      assert.ok(rules[path], path);
    }
    assert.ok(!Object.keys(rules).some((p) => /\/(kubernetes|secret)(\/|$)/.test(p)));
    // The only globs: the roles of the two auth methods (read). Any other would reach unlisted paths.
    assert.deepEqual(
      Object.keys(rules).filter((p) => /[*+]/.test(p)),
      ["auth/k8s-apps/role/*", "auth/jwt-github/role/*"],
    );
    for (const hcl of r.ofType("vault:index/policy:Policy").map((p) => p.inputs.policy)) {
      assert.doesNotMatch(hcl, /"sys\/(auth|mounts|policies\/acl)\/\*"|\/\+\//);
    }
    assert.ok(
      Object.values(rules).every((caps) => caps.every((c) => c === "read" || c === "sudo")),
    );
  });

  it("protects the KV mount and the auth methods: replacing one would lose what it holds", () => {
    for (const type of [
      "vault:index/mount:Mount",
      "vault:index/authBackend:AuthBackend",
      "vault:jwt/authBackend:AuthBackend",
    ]) {
      const [resource] = recorder.ofType(type);
      assert.equal(resource.options.protect, true, type);
      assert.ok(CRITICAL_TYPES[type], `${type} is in the preview summary's critical list`);
    }
  });

  it("reviews Kubernetes logins with OpenBao's own service account and binds each role to an audience", () => {
    const [config] = recorder.ofType("vault:kubernetes/authBackendConfig:AuthBackendConfig");
    assert.equal(config.inputs.disableLocalCaJwt, false);
    assert.equal(config.inputs.disableIssValidation, undefined, "deprecated flag not set");
    assert.equal(config.inputs.issuer, undefined);
    const [role] = recorder.ofType("vault:kubernetes/authBackendRole:AuthBackendRole");
    assert.equal(role.inputs.audience, "openbao");
  });

  it("binds service accounts to policies, only after the policies exist", () => {
    const [role] = recorder.ofType("vault:kubernetes/authBackendRole:AuthBackendRole");
    assert.deepEqual(
      [
        role.inputs.roleName,
        role.inputs.boundServiceAccountNames,
        role.inputs.boundServiceAccountNamespaces,
        role.inputs.tokenPolicies,
        role.inputs.tokenTtl,
      ],
      ["external-secrets", ["external-secrets"], ["external-secrets"], ["external-secrets"], 3600],
    );
    const policyUrns = recorder.ofType("vault:index/policy:Policy").map((p) => p.urn);
    assert.ok(policyUrns.every((urn) => role.options.dependencies.includes(urn)));
  });

  it("mounts a KV version 2 secrets engine", () => {
    const [kv] = recorder.ofType("vault:index/mount:Mount");
    assert.deepEqual(
      [kv.inputs.path, kv.inputs.type, kv.inputs.options],
      ["secret", "kv", { version: "2" }],
    );
  });

  it("lets CI log in with GitHub's OIDC token: previews from the PR workflow, apply from main's, each in its environment", () => {
    const [jwt] = recorder.ofType("vault:jwt/authBackend:AuthBackend");
    assert.equal(jwt.inputs.oidcDiscoveryUrl, "https://token.actions.githubusercontent.com");
    assert.equal(jwt.inputs.boundIssuer, "https://token.actions.githubusercontent.com");
    const roles = Object.fromEntries(
      recorder
        .ofType("vault:jwt/authBackendRole:AuthBackendRole")
        .map((r) => [r.inputs.roleName, r.inputs]),
    );
    assert.deepEqual(roles["ci-preview"].boundClaims, {
      repository: "example/homelab",
      job_workflow_ref: "example/homelab/.github/workflows/pull-request.yml@*",
      environment: "preview-staging",
    });
    assert.deepEqual(roles["ci-preview"].tokenPolicies, ["ci-preview"]);
    assert.deepEqual(roles["ci-apply"].boundClaims, {
      repository: "example/homelab",
      ref: "refs/heads/main",
      job_workflow_ref: "example/homelab/.github/workflows/main.yml@refs/heads/main",
      environment: "staging",
    });
    assert.deepEqual(roles["ci-apply"].tokenPolicies, ["ci-apply"]);
    for (const role of Object.values(roles) as Record<string, unknown>[]) {
      assert.equal(role.boundClaimsType, "glob");
      assert.deepEqual(role.boundAudiences, ["openbao"]);
    }
  });

  it("takes the credentials the CLI hands over for the run, as secrets, before the stack's", async () => {
    const secrets = {
      "talos-platform-app:openbaoToken": "FAKE-SECRET-from-bitwarden",
      "talos-platform-app:grafanaAuth": "FAKE-SECRET-grafana-from-env",
    };
    await withRunSecrets(secrets, async () => {
      // No secret in the stack at all: the run's values satisfy validation and reach the providers.
      const { recorder: fromRun } = await runApp({ secrets: {} });
      const openbao = fromRun.named("openbao-provider");
      assert.equal(openbao.inputs.token, "FAKE-SECRET-from-bitwarden");
      assert.ok(openbao.secretPaths.includes("token"));
      const grafana = fromRun.named("grafana-provider");
      assert.equal(grafana.inputs.auth, "FAKE-SECRET-grafana-from-env");
      assert.ok(grafana.secretPaths.includes("auth"));
    });
    // The stack's own value loses to the run's, as the CLI's order (Bitwarden, environment, stack) says.
    await withRunSecrets(secrets, async () => {
      const { recorder: both } = await runApp();
      assert.equal(both.named("openbao-provider").inputs.token, "FAKE-SECRET-from-bitwarden");
    });
  });

  it("passes the OpenBao and Grafana tokens to their providers only as secrets", () => {
    const openbao = recorder.named("openbao-provider");
    assert.equal(openbao.inputs.address, "https://openbao.staging.example.net");
    assert.equal(openbao.inputs.token, TOKENS.openbaoToken);
    assert.ok(openbao.secretPaths.includes("token"));
    const grafana = recorder.named("grafana-provider");
    assert.equal(grafana.inputs.auth, TOKENS.grafanaAuth);
    assert.ok(grafana.secretPaths.includes("auth"));
  });

  it("creates Grafana's folder, data source and dashboards from the files in app/dashboards", () => {
    const [folder] = recorder.ofType("grafana:oss/folder:Folder");
    assert.deepEqual([folder.inputs.uid, folder.inputs.title], ["platform", "Platform"]);
    const [source] = recorder.ofType("grafana:oss/dataSource:DataSource");
    assert.deepEqual(
      [
        source.inputs.name,
        source.inputs.type,
        source.inputs.isDefault,
        JSON.parse(source.inputs.jsonDataEncoded),
      ],
      ["Prometheus", "prometheus", true, { timeInterval: "30s" }],
    );
    const dashboards = recorder.ofType("grafana:oss/dashboard:Dashboard");
    assert.deepEqual(dashboards.map((d) => JSON.parse(d.inputs.configJson).title).sort(), [
      "Talos nodes",
      "etcd",
    ]);
    assert.ok(dashboards.every((d) => d.inputs.folder === "platform"));
    assert.deepEqual(resolved.grafana.dashboards, { platform: ["Talos nodes", "etcd"] });
  });

  it("logs CI in through the JWT role matching its branch", async () => {
    const ref = process.env.GITHUB_REF;
    try {
      for (const [branch, role] of [
        ["refs/heads/main", "ci-apply"],
        ["refs/pull/7/merge", "ci-preview"],
      ]) {
        process.env.GITHUB_REF = branch;
        const { recorder: r } = await runApp({
          secrets: { openbaoJwt: "FAKE-SECRET-oidc", grafanaAuth: TOKENS.grafanaAuth },
        });
        const provider = r.named("openbao-provider");
        // Provider configuration reaches the engine as JSON strings.
        assert.deepEqual(JSON.parse(provider.inputs.authLoginJwt), {
          mount: "jwt-github",
          role,
          jwt: "FAKE-SECRET-oidc",
        });
        assert.equal(provider.inputs.token, undefined);
        assert.ok(
          provider.secretPaths.some((p) => p === "authLoginJwt" || p === "authLoginJwt.jwt"),
        );
      }
    } finally {
      if (ref === undefined) delete process.env.GITHUB_REF;
      else process.env.GITHUB_REF = ref;
    }
  });

  for (const [situation, foundation, message] of [
    [
      "has no outputs yet",
      null,
      /^talos-platform-app:foundationStack: foundation stack organization\/talos-platform\/staging has no endpoint, kubernetesCaCertificate, clusterName output yet; the app layer needs the cluster first\. Run `npm run platform -- up staging` \(the foundation layer\), then retry; if the foundation is another stack, set talos-platform-app:foundationStack \(organization\/project\/stack\) in app\/Pulumi\.staging\.yaml\.$/,
    ],
    [
      "does not exist",
      "missing",
      /^talos-platform-app:foundationStack: foundation stack organization\/talos-platform\/staging could not be read \(.*unknown stack "organization\/talos-platform\/staging".*\); the app layer needs the cluster first\. Run `npm run platform -- up staging`/s,
    ],
  ] as const) {
    it(`registers nothing of OpenBao or Grafana when the foundation stack ${situation}`, async () => {
      const r = new Recorder();
      await assert.rejects(runApp({ foundation, recorder: r }), (error: Error) => {
        assert.match(error.message, message);
        return true;
      });
      await r.settled();
      assert.deepEqual(openbaoOrGrafana(r), [], "no provider and no resource");
      assert.deepEqual(r.resources.map((res) => res.type).sort(), [
        "platform:app:FoundationReference",
        "pulumi:pulumi:StackReference",
      ]);
    });
  }

  it("runs over the prod stack file too", async () => {
    const { recorder: r } = await runApp({
      stack: "prod",
      foundation: { ...FOUNDATION, endpoint: "https://api.prod.example.net:6443" },
    });
    assert.equal(
      r.ofType("pulumi:pulumi:StackReference")[0].inputs.name,
      "organization/talos-platform/prod",
    );
    assert.equal(
      r.ofType("vault:kubernetes/authBackendConfig:AuthBackendConfig")[0].inputs.kubernetesHost,
      "https://api.prod.example.net:6443",
    );
  });

  for (const [what, change] of [
    ["has a bad address", (v: any) => (v.openbao.address = "openbao")],
    [
      "puts the Kubernetes auth method on CI's JWT path",
      (v: any) => (v.openbao.kubernetesAuthPath = "jwt-github"),
    ],
    ["puts the KV mount on OpenBao's sys/", (v: any) => (v.openbao.kvMount = "sys")],
  ] as const) {
    it(`registers nothing when the app stack file ${what}`, async () => {
      const recorder = new Recorder();
      recorder.behaviour.stackOutputs = {};
      const values: any = structuredClone(readStackFile("staging", "app", PROJECT));
      change(values);
      await setupRun(values, {
        recorder,
        project: PROJECT,
        stack: "staging",
        secrets: { openbaoToken: "t", grafanaAuth: "g" },
      });
      const { appLayer } = await import("../components/app");
      await assert.rejects(appLayer(), StackConfigError);
      await recorder.settled();
      assert.equal(recorder.resources.length, 0);
    });
  }
});

describe("app layer reading the foundation's published values (foundationSource: published)", () => {
  const PUBLISHED = "example-homelab-pulumi-state/.platform-published/talos-platform/staging.json";
  const run = async (objects: Record<string, string>) => {
    const recorder = new Recorder();
    recorder.behaviour.bucketObjects = objects;
    // No foundation outputs at all: reading them would fail, as it does without the key.
    recorder.behaviour.stackOutputs = {};
    const values = { ...readStackFile("staging", "app", PROJECT), foundationSource: "published" };
    await setupRun(values, { recorder, project: PROJECT, stack: "staging", secrets: TOKENS });
    const { appLayer } = await import("../components/app");
    return { recorder, outputs: appLayer() };
  };
  const published = JSON.stringify({
    endpoint: FOUNDATION.endpoint,
    kubernetesCaCertificate: FOUNDATION.kubernetesCaCertificate,
    clusterName: FOUNDATION.clusterName,
  });

  it("binds OpenBao's Kubernetes auth to the published endpoint and CA, with no stack reference", async () => {
    const { recorder, outputs } = await run({ [PUBLISHED]: published });
    await resolveAll(await outputs);
    await recorder.settled();
    assert.equal(recorder.ofType("pulumi:pulumi:StackReference").length, 0);
    const [read] = recorder.invokes.filter(
      (i) => i.token === "gcp:storage/getBucketObjectContent:getBucketObjectContent",
    );
    assert.deepEqual(
      [read.inputs.bucket, read.inputs.name],
      ["example-homelab-pulumi-state", ".platform-published/talos-platform/staging.json"],
    );
    const [config] = recorder.ofType("vault:kubernetes/authBackendConfig:AuthBackendConfig");
    assert.equal(config.inputs.kubernetesHost, FOUNDATION.endpoint);
    assert.equal(config.inputs.kubernetesCaCert, FOUNDATION.kubernetesCaCertificate);
  });

  it("stops, naming the key and the object, when nothing was published or it is not the values", async () => {
    for (const [objects, why] of [
      [{}, /could not be read/],
      [
        { [PUBLISHED]: JSON.stringify({ endpoint: "x" }) },
        /is not the foundation's published values/,
      ],
    ] as const) {
      const { recorder, outputs } = await run(objects);
      await assert.rejects(
        outputs,
        (e: Error) =>
          /^talos-platform-app:foundationSource: /.test(e.message) &&
          e.message.includes(`gs://${PUBLISHED}`) &&
          why.test(e.message),
      );
      await recorder.settled();
      assert.equal(openbaoOrGrafana(recorder).length, 0, "nothing of OpenBao or Grafana");
    }
  });

  it("refuses published on a backend that is not gs://", async () => {
    const recorder = new Recorder();
    const values = {
      ...readStackFile("staging", "app", PROJECT),
      foundationSource: "published",
      backend: "file:///tmp/state",
    };
    await setupRun(values, { recorder, project: PROJECT, stack: "staging", secrets: TOKENS });
    const { appLayer } = await import("../components/app");
    await assert.rejects(
      appLayer(),
      /foundationSource: published needs talos-platform-app:backend on gs:\/\//,
    );
  });
});
