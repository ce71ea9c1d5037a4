import * as pulumi from "@pulumi/pulumi";
import { strict as assert } from "node:assert";
import { type BwsRunner, listBitwardenSecrets, parseSecretList } from "../../automation/bitwarden";
import { runCli } from "../../automation/cli";
import { CREDENTIALS, resolveCredentials } from "../../automation/credentials";
import { APP_SECRET_KEYS } from "../../components/config/app";
import { BOOTSTRAP_SECRET_KEYS } from "../../components/config/bootstrap";
import { FOUNDATION_SECRET_KEYS } from "../../components/config/keys";
import { ExitCode, UserError } from "../../automation/errors";
import { resolveLayer, readStackFile } from "../../automation/layers";
import { withRunSecrets } from "../setup/runSecrets";
import { readStackFile as readFixture, setupRun, unwrap } from "../harness";
import { cleanupRepos, makeRepo, testContext } from "./helpers";

/** A foundation stack that needs the Proxmox token and the Flux deploy key. */
const NEEDY_STACK = [
  "config:",
  "  talos-platform:nodes:",
  "    - { name: cp-1, role: controlplane, platform: proxmox }",
  "  talos-platform:flux:",
  "    repository: ssh://git@github.com/example/homelab.git",
  "",
].join("\n");

/** A fake `bws` that records its calls and lists the given secrets. */
function fakeBws(
  secrets: Record<string, string>,
): BwsRunner & { calls: { args: readonly string[]; token?: string }[] } {
  const calls: { args: readonly string[]; token?: string }[] = [];
  const run = (async (args, env) => {
    calls.push({ args, token: env.BWS_ACCESS_TOKEN });
    return JSON.stringify(
      Object.entries(secrets).map(([key, value], i) => ({
        object: "secret",
        id: `id-${i}`,
        key,
        value,
        note: "",
      })),
    );
  }) as BwsRunner & { calls: typeof calls };
  run.calls = calls;
  return run;
}

describe("credentials", () => {
  afterEach(cleanupRepos);

  const resolve = (env: Record<string, string>, bitwarden?: Map<string, string>) => {
    const repo = makeRepo({
      foundation: { project: "talos-platform", stacks: { staging: NEEDY_STACK } },
    });
    const layer = resolveLayer(repo, "foundation");
    return resolveCredentials({
      layer,
      stackFile: readStackFile(layer, "staging"),
      env,
      bitwarden,
    });
  };

  it("takes a credential from Bitwarden before the environment", () => {
    const resolved = resolve(
      { PROXMOX_VE_API_TOKEN: "from-env", FLUX_DEPLOY_KEY: "key-from-env" },
      new Map([["proxmox-api-token", "from-bitwarden"]]),
    );
    assert.deepEqual(resolved.runSecrets, {
      "talos-platform:proxmoxApiToken": "from-bitwarden",
      "talos-platform:fluxDeployKey": "key-from-env",
    });
    assert.deepEqual(resolved.sources, {
      proxmoxApiToken: "bitwarden",
      fluxDeployKey: "environment",
    });
  });

  it("names every missing required credential and every place it looked", () => {
    assert.throws(
      () => resolve({ FLUX_DEPLOY_KEY: "k" }),
      (error: UserError) =>
        error.exitCode === ExitCode.usage &&
        error.message ===
          "foundation (Pulumi.staging.yaml): missing credential proxmoxApiToken; got none of the places below. Provide it in one of: " +
            'proxmoxApiToken (Proxmox API token (user@realm!id=uuid)): Bitwarden secret "proxmox-api-token" (BWS_ACCESS_TOKEN not set), ' +
            "environment variable PROXMOX_VE_API_TOKEN, or `pulumi config set --secret proxmoxApiToken`",
    );
  });

  it("accepts a credential already set on the stack, and leaves optional ones to the providers", () => {
    const repo = makeRepo({
      foundation: {
        project: "talos-platform",
        stacks: {
          staging: `${NEEDY_STACK}  talos-platform:proxmoxApiToken:\n    secure: v1:abc\n  talos-platform:fluxDeployKey:\n    secure: v1:def\n`,
        },
      },
    });
    const layer = resolveLayer(repo, "foundation");
    const resolved = resolveCredentials({
      layer,
      stackFile: readStackFile(layer, "staging"),
      env: {},
      bitwarden: undefined,
    });
    assert.deepEqual(resolved.runSecrets, {});
    assert.deepEqual(resolved.sources, { proxmoxApiToken: "stack", fluxDeployKey: "stack" });
  });

  it("resolves exactly the secret keys each layer's program reads", () => {
    assert.deepEqual(
      CREDENTIALS.foundation.map((c) => c.configKey),
      [...FOUNDATION_SECRET_KEYS],
    );
    assert.deepEqual(
      CREDENTIALS.app.map((c) => c.configKey),
      [...APP_SECRET_KEYS],
    );
    assert.deepEqual(
      CREDENTIALS.bootstrap.map((c) => c.configKey),
      [...BOOTSTRAP_SECRET_KEYS],
    );
  });

  it("hands every credential of every layer found for the run to its program, as a secret", async () => {
    const layers = [
      {
        keys: FOUNDATION_SECRET_KEYS,
        project: "talos-platform",
        values: readFixture("staging"),
        load: async () =>
          (await import("../../components/config/load")).loadPlatformConfig().secrets,
      },
      {
        keys: APP_SECRET_KEYS,
        project: "talos-platform-app",
        values: readFixture("staging", "app", "talos-platform-app"),
        load: async () => (await import("../../components/config/appLoad")).loadAppConfig().secrets,
      },
      {
        keys: BOOTSTRAP_SECRET_KEYS,
        project: "talos-platform-bootstrap",
        values: readFixture("shared", "bootstrap", "talos-platform-bootstrap"),
        load: async () => {
          const { loadBootstrapConfig } = await import("../../components/config/bootstrapLoad");
          return { gcpCredentials: loadBootstrapConfig().gcpCredentials };
        },
      },
    ];
    for (const layer of layers) {
      await setupRun(layer.values, { project: layer.project });
      const runValues = Object.fromEntries(
        layer.keys.map((key) => [`${layer.project}:${key}`, `run-${key}`]),
      );
      await withRunSecrets(runValues, async () => {
        const secrets = (await layer.load()) as Record<string, unknown>;
        for (const key of layer.keys) {
          const value = secrets[key] as pulumi.Output<string> | undefined;
          assert.ok(value, `${layer.project}:${key} did not reach the program`);
          assert.equal(await unwrap(value), `run-${key}`, key);
          assert.equal(await pulumi.isSecret(value), true, key);
        }
      });
    }
  });

  it("declares the foundation's credentials, none of them from OpenBao", () => {
    assert.deepEqual(
      CREDENTIALS.foundation.map((c) => [c.configKey, c.bitwardenKey, c.envVar]),
      [
        ["proxmoxApiToken", "proxmox-api-token", "PROXMOX_VE_API_TOKEN"],
        ["fluxDeployKey", "flux-deploy-key", "FLUX_DEPLOY_KEY"],
        ["gcpCredentials", "gcp-credentials", "GOOGLE_CREDENTIALS"],
        ["ociPrivateKey", "oci-private-key", "OCI_PRIVATE_KEY"],
        [
          "openstackApplicationCredentialSecret",
          "openstack-application-credential-secret",
          "OS_APPLICATION_CREDENTIAL_SECRET",
        ],
        ["proxmoxSshPrivateKey", "proxmox-ssh-private-key", "PROXMOX_VE_SSH_PRIVATE_KEY"],
        ["gcpUnsealCredentials", "gcp-unseal-credentials", "GCP_UNSEAL_CREDENTIALS"],
      ],
    );
    assert.ok(
      CREDENTIALS.foundation.every(
        (c) => !/openbao|vault/i.test(`${c.configKey} ${c.bitwardenKey} ${c.envVar}`),
      ),
    );
  });

  describe("Bitwarden", () => {
    it("lists the project's secrets with bws and the access token", async () => {
      const bws = fakeBws({ "proxmox-api-token": "t" });
      const secrets = await listBitwardenSecrets(
        { BWS_ACCESS_TOKEN: "0.token", BWS_PROJECT_ID: "proj-1" },
        bws,
      );
      assert.deepEqual([...secrets!.entries()], [["proxmox-api-token", "t"]]);
      assert.deepEqual(bws.calls, [
        { args: ["secret", "list", "proj-1", "--output", "json"], token: "0.token" },
      ]);
    });

    it("is not asked at all without BWS_ACCESS_TOKEN", async () => {
      const bws = fakeBws({});
      assert.equal(await listBitwardenSecrets({}, bws), undefined);
      assert.deepEqual(bws.calls, []);
    });

    it("says what to install when the token is set but bws is missing", async () => {
      const missing: BwsRunner = async () => {
        throw Object.assign(new Error("spawn bws ENOENT"), { code: "ENOENT" });
      };
      await assert.rejects(
        listBitwardenSecrets({ BWS_ACCESS_TOKEN: "0.t" }, missing),
        (error: UserError) =>
          error.message.startsWith(
            "bws: BWS_ACCESS_TOKEN is set but the Bitwarden Secrets Manager CLI is not installed",
          ),
      );
    });

    it("reports a failing bws without echoing the token", async () => {
      const failing: BwsRunner = async () => {
        throw Object.assign(new Error("exit 1"), {
          stderr: "Error: [400 Bad Request] access token is invalid\n",
        });
      };
      await assert.rejects(
        listBitwardenSecrets({ BWS_ACCESS_TOKEN: "0.secret-token" }, failing),
        (error: UserError) =>
          error.message.includes("access token is invalid") &&
          !error.message.includes("0.secret-token"),
      );
    });

    it("ignores entries that are not secrets", () => {
      assert.deepEqual(
        [...parseSecretList('[{"key":"a","value":"1"},{"id":"x"},null]').entries()],
        [["a", "1"]],
      );
    });
  });

  describe("in a run", () => {
    it("asks Bitwarden once, hands the values to the run (not the stack file) and prints only names", async () => {
      const repo = makeRepo({
        foundation: { project: "talos-platform", stacks: { staging: NEEDY_STACK } },
      });
      const bws = fakeBws({
        "proxmox-api-token": "pve-FAKE-SECRET",
        "flux-deploy-key": "flux-FAKE-SECRET",
      });
      const ctx = testContext({ repoRoot: repo, env: { BWS_ACCESS_TOKEN: "0.t" }, bws });
      assert.equal(await runCli(["up", "staging"], ctx), ExitCode.ok);
      assert.equal(bws.calls.length, 1);
      const [open] = ctx.workspaces.callsOf("openStack");
      assert.deepEqual(open.request.runSecrets, {
        "talos-platform:proxmoxApiToken": "pve-FAKE-SECRET",
        "talos-platform:fluxDeployKey": "flux-FAKE-SECRET",
      });
      const printed = ctx.stdout.text + ctx.stderr.text;
      assert.match(
        printed,
        /credentials proxmoxApiToken \(bitwarden\), fluxDeployKey \(bitwarden\)/,
      );
      assert.doesNotMatch(printed, /FAKE-SECRET/);
    });

    it("hands a GCP key from Bitwarden to the engine (gs://, gcpkms://) for operations and outputs alike", async () => {
      const repo = makeRepo({
        foundation: { project: "talos-platform", stacks: { staging: "config: {}\n" } },
      });
      const bws = fakeBws({ "gcp-credentials": '{"private_key":"FAKE-SECRET"}' });
      for (const args of [
        ["preview", "staging"],
        ["outputs", "staging"],
      ]) {
        const ctx = testContext({ repoRoot: repo, env: { BWS_ACCESS_TOKEN: "0.t" }, bws });
        assert.equal(await runCli(args, ctx), ExitCode.ok, args[0]);
        const [open] = ctx.workspaces.callsOf("openStack");
        assert.equal(open.request.envVars.GOOGLE_CREDENTIALS, '{"private_key":"FAKE-SECRET"}');
      }
      // A key already in the environment is inherited by the engine as it is.
      const fromEnv = testContext({
        repoRoot: repo,
        env: { BWS_ACCESS_TOKEN: "0.t", GOOGLE_CREDENTIALS: "{}" },
        bws,
      });
      await runCli(["preview", "staging"], fromEnv);
      assert.equal(
        fromEnv.workspaces.callsOf("openStack")[0].request.envVars.GOOGLE_CREDENTIALS,
        undefined,
      );
    });

    it("refuses before any engine work when a required credential is missing", async () => {
      const repo = makeRepo({
        foundation: { project: "talos-platform", stacks: { staging: NEEDY_STACK } },
      });
      const ctx = testContext({ repoRoot: repo, env: {} });
      assert.equal(await runCli(["up", "staging"], ctx), ExitCode.usage);
      assert.match(
        ctx.stderr.text,
        /^  - proxmoxApiToken: missing credential, the Proxmox API token/m,
      );
      assert.match(ctx.stderr.text, /^  - fluxDeployKey: missing credential, the SSH private key/m);
      assert.equal(ctx.workspaces.callsOf("openStack").length, 0);
      assert.equal(ctx.workspaces.callsOf("operation").length, 0);
    });
  });
});

describe("up runs the config part of preflight first", () => {
  afterEach(cleanupRepos);

  const stack = (talos: string, kubernetes: string) =>
    `config:\n  talos-platform:cluster:\n    talosVersion: ${talos}\n    kubernetesVersion: ${kubernetes}\n`;

  it("refuses a Kubernetes jump of two minors before the engine changes anything", async () => {
    const repo = makeRepo({
      foundation: { project: "talos-platform", stacks: { staging: stack("v1.13.9", "1.36.3") } },
    });
    const ctx = testContext({ repoRoot: repo });
    ctx.workspaces.outputs = {
      talosVersion: { value: "v1.13.9", secret: false },
      kubernetesVersion: { value: "1.34.2", secret: false },
    };
    assert.equal(await runCli(["up", "staging"], ctx), ExitCode.refused);
    assert.match(
      ctx.stderr.text,
      /preflight foundation\/staging: 1 check failed; nothing was changed/,
    );
    assert.deepEqual(ctx.workspaces.callsOf("operation"), []);
  });

  it("goes ahead on a first up, with nothing deployed to compare with", async () => {
    const repo = makeRepo({
      foundation: { project: "talos-platform", stacks: { staging: stack("v1.13.9", "1.36.3") } },
    });
    const ctx = testContext({ repoRoot: repo });
    assert.equal(await runCli(["up", "staging"], ctx), ExitCode.ok);
    assert.deepEqual(
      ctx.workspaces.callsOf("operation").map((c) => c.operation),
      ["up"],
    );
  });
});
