import { strict as assert } from "node:assert";
import * as http from "node:http";
import type { AddressInfo } from "node:net";
import { runCli } from "../../automation/cli";
import { ExitCode } from "../../automation/errors";
import { type FetchJson, fetchGithubIdToken } from "../../automation/githubOidc";
import { cleanupRepos, makeRepo, testContext } from "./helpers";

/** An app stack on a shared backend whose CI logs into OpenBao with audience `bao-ci`. */
const APP_STACK = [
  "config:",
  "  talos-platform-app:backend: gs://example-state",
  "  talos-platform-app:openbao:",
  "    address: https://openbao.example.net",
  "    ci: { repository: example/homelab, previewPolicies: [ci-preview], applyPolicies: [ci-apply], audience: bao-ci }",
  "",
].join("\n");

/** What GitHub Actions sets for a job with `permissions: id-token: write`. */
const ACTIONS = {
  CI: "true",
  GITHUB_ACTIONS: "true",
  PULUMI_CONFIG_PASSPHRASE: "ci-passphrase",
  ACTIONS_ID_TOKEN_REQUEST_URL: "https://pipelines.example/idtoken?api-version=2.0",
  ACTIONS_ID_TOKEN_REQUEST_TOKEN: "request-FAKE-SECRET",
};

describe("GitHub's OIDC token for OpenBao", () => {
  afterEach(cleanupRepos);

  it("is asked for with the job's request token and the audience, as core.getIDToken does", async () => {
    // A stand-in for GitHub's token service on loopback; it answers one request per test.
    const seen: { url?: string; authorization?: string } = {};
    const server = http.createServer((request, response) => {
      seen.url = request.url;
      seen.authorization = request.headers.authorization;
      response.setHeader("content-type", "application/json");
      response.end(JSON.stringify({ count: 1, value: "eyJ.jwt-FAKE-SECRET.sig" }));
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    try {
      const { port } = server.address() as AddressInfo;
      const masked: string[] = [];
      const token = await fetchGithubIdToken({
        env: {
          GITHUB_ACTIONS: "true",
          ACTIONS_ID_TOKEN_REQUEST_URL: `http://127.0.0.1:${port}/idtoken?api-version=2.0`,
          ACTIONS_ID_TOKEN_REQUEST_TOKEN: "request-token",
        },
        audience: "openbao",
        mask: (command) => masked.push(command),
      });
      assert.equal(token, "eyJ.jwt-FAKE-SECRET.sig");
      assert.equal(seen.url, "/idtoken?api-version=2.0&audience=openbao");
      assert.equal(seen.authorization, "bearer request-token");
      assert.deepEqual(masked, ["::add-mask::eyJ.jwt-FAKE-SECRET.sig\n"]);
    } finally {
      server.close();
    }
  });

  it("is fetched fresh right before each run of the app layer and handed over as openbaoJwt", async () => {
    const repo = makeRepo({
      app: { project: "talos-platform-app", stacks: { staging: APP_STACK, prod: APP_STACK } },
    });
    let issued = 0;
    const requests: string[] = [];
    const fetchJson: FetchJson = async (url) => {
      requests.push(url);
      issued++;
      return { value: `jwt-${issued}-FAKE-SECRET` };
    };
    for (const env of ["staging", "prod"]) {
      const ctx = testContext({ repoRoot: repo, env: ACTIONS, fetchJson });
      assert.equal(await runCli(["preview", env, "--layer", "app"], ctx), ExitCode.ok);
      const [open] = ctx.workspaces.callsOf("openStack");
      assert.equal(
        open.request.runSecrets?.["talos-platform-app:openbaoJwt"],
        `jwt-${issued}-FAKE-SECRET`,
        "the token fetched for this run, not an earlier one",
      );
      assert.match(ctx.stdout.text, /credentials openbaoJwt \(github-oidc\)/);
      assert.match(ctx.stdout.text, new RegExp(`^::add-mask::jwt-${issued}-FAKE-SECRET$`, "m"));
    }
    assert.deepEqual(requests, [
      "https://pipelines.example/idtoken?api-version=2.0&audience=bao-ci",
      "https://pipelines.example/idtoken?api-version=2.0&audience=bao-ci",
    ]);
  });

  it("is not asked for outside a job that may have one, nor for a stack without CI login", async () => {
    const repo = makeRepo({
      app: {
        project: "talos-platform-app",
        stacks: { staging: APP_STACK, prod: "config:\n  talos-platform-app:backend: gs://x\n" },
      },
    });
    const fetchJson: FetchJson = async () => assert.fail("no token wanted");
    const workstation = testContext({
      repoRoot: repo,
      env: { PULUMI_CONFIG_PASSPHRASE: "p" },
      fetchJson,
    });
    assert.equal(await runCli(["preview", "staging", "--layer", "app"], workstation), ExitCode.ok);
    const noCi = testContext({ repoRoot: repo, env: ACTIONS, fetchJson });
    assert.equal(await runCli(["preview", "prod", "--layer", "app"], noCi), ExitCode.ok);
  });

  it("says what the job lacks when GitHub gives no token", async () => {
    const repo = makeRepo({
      app: { project: "talos-platform-app", stacks: { staging: APP_STACK } },
    });
    const fetchJson: FetchJson = async () => {
      throw new Error("HTTP 403 Forbidden");
    };
    const ctx = testContext({ repoRoot: repo, env: ACTIONS, fetchJson });
    assert.equal(await runCli(["preview", "staging", "--layer", "app"], ctx), ExitCode.usage);
    assert.equal(
      ctx.stderr.text.trim(),
      'GitHub OIDC token: could not be fetched for OpenBao\'s JWT login; got "HTTP 403 Forbidden". Give the job `permissions: id-token: write` (pull requests from forks get no token)',
    );
    assert.equal(ctx.workspaces.callsOf("openStack").length, 0);
  });
});
