import * as pulumi from "@pulumi/pulumi";
import * as vault from "@pulumi/vault";
import type { AppSecrets, AppSpec } from "../config/app";
import { CI_JWT_PATH } from "../config/rules/openbaoPaths";
import { ciPolicies } from "./ciPolicies";
import type { FoundationValues } from "./foundationRef";

/** The workflows CI's JWT roles trust (.github/workflows/). */
export const CI_WORKFLOWS = {
  preview: ".github/workflows/pull-request.yml",
  apply: ".github/workflows/main.yml",
} as const;

/** The GitHub environment a job must run in to log in: the stack's name, `preview-<stack>` on PRs. */
export function ciEnvironments(stack: string): { preview: string; apply: string } {
  return { preview: `preview-${stack}`, apply: stack };
}

/** GitHub Actions' OIDC issuer. */
const GITHUB_ACTIONS_ISSUER = "https://token.actions.githubusercontent.com";

/** Inputs of an {@link OpenbaoConfiguration}. */
export interface OpenbaoConfigurationArgs {
  readonly settings: AppSpec["openbao"];
  readonly secrets: AppSecrets;
  readonly foundation: pulumi.Output<FoundationValues>;
  /** The stack's name: the GitHub environments CI's roles bind derive from it. */
  readonly stack: string;
}

/** The provider login: a token (workstation) or CI's OIDC token through the JWT `<ci>-apply`/`-preview` role. */
function providerArgs(settings: AppSpec["openbao"], secrets: AppSecrets): vault.ProviderArgs {
  if (secrets.openbaoToken)
    return { address: settings.address, token: secrets.openbaoToken, skipChildToken: true };
  return {
    address: settings.address,
    skipChildToken: true,
    authLoginJwt: {
      mount: CI_JWT_PATH,
      role: secrets.openbaoJwtRole,
      jwt: secrets.openbaoJwt!,
    },
  };
}

/**
 * What OpenBao needs from this platform: policies (from files in the repo and the stack file), a
 * Kubernetes auth backend bound to the cluster (API host and CA from the foundation), roles binding
 * service accounts to policies, a KV v2 mount, and JWT roles for the CI job itself.
 */
export class OpenbaoConfiguration extends pulumi.ComponentResource {
  public readonly policyNames: string[];
  public readonly kubernetesAuthPath: pulumi.Output<string>;
  public readonly kvMount: pulumi.Output<string>;

  constructor(
    name: string,
    args: OpenbaoConfigurationArgs,
    opts?: pulumi.ComponentResourceOptions,
  ) {
    super("platform:app:OpenbaoConfiguration", name, {}, opts);
    const { settings } = args;
    const provider = new vault.Provider(`${name}-provider`, providerArgs(settings, args.secrets), {
      parent: this,
    });
    const resourceOpts = { parent: this, provider };

    const allPolicies = [...settings.policies, ...ciPolicies(settings)];
    const policies = allPolicies.map(
      (policy) =>
        new vault.Policy(
          `${name}-policy-${policy.name}`,
          { name: policy.name, policy: policy.hcl },
          resourceOpts,
        ),
    );
    this.policyNames = allPolicies.map((p) => p.name);
    // Losing a mount or an auth method loses what it holds: the engine refuses, and the preview
    // summary calls it out (automation/critical.ts).
    const keep = { ...resourceOpts, protect: true };
    // Roles name policies by string; depending on them makes a role never point at a missing policy.
    const afterPolicies = { ...resourceOpts, dependsOn: policies };

    const kubernetes = new vault.AuthBackend(
      `${name}-kubernetes`,
      {
        type: "kubernetes",
        path: settings.kubernetesAuthPath,
        description: "Kubernetes service accounts of the cluster",
      },
      keep,
    );
    new vault.kubernetes.AuthBackendConfig(
      `${name}-kubernetes-config`,
      {
        backend: kubernetes.path,
        kubernetesHost: args.foundation.endpoint,
        kubernetesCaCert: args.foundation.kubernetesCaCertificate,
        // OpenBao runs in this cluster: it reviews login tokens (TokenReview) with its own service
        // account's token, which needs the `system:auth-delegator` ClusterRole (the OpenBao Helm
        // chart's server.authDelegator, on by default). No reviewer JWT is stored here.
        disableLocalCaJwt: false,
      },
      resourceOpts,
    );
    for (const role of settings.roles) {
      new vault.kubernetes.AuthBackendRole(
        `${name}-kubernetes-role-${role.name}`,
        {
          backend: kubernetes.path,
          roleName: role.name,
          boundServiceAccountNames: role.serviceAccounts,
          boundServiceAccountNamespaces: role.namespaces,
          tokenPolicies: role.policies,
          tokenTtl: role.ttl,
          audience: role.audience,
        },
        afterPolicies,
      );
    }

    const kv = new vault.Mount(
      `${name}-kv`,
      {
        path: settings.kvMount,
        type: "kv",
        options: { version: "2" },
        description: "Application secrets (KV v2)",
      },
      keep,
    );

    if (settings.ci) {
      const ci = settings.ci;
      const jwt = new vault.jwt.AuthBackend(
        `${name}-ci-jwt`,
        {
          path: CI_JWT_PATH,
          type: "jwt",
          oidcDiscoveryUrl: GITHUB_ACTIONS_ISSUER,
          boundIssuer: GITHUB_ACTIONS_ISSUER,
          description: `GitHub Actions of ${ci.repository}`,
        },
        keep,
      );
      const environments = ciEnvironments(args.stack);
      const role = (
        roleName: string,
        roleTokenPolicies: string[],
        claims: Record<string, string>,
      ) =>
        new vault.jwt.AuthBackendRole(
          `${name}-${roleName}`,
          {
            backend: CI_JWT_PATH,
            roleName,
            roleType: "jwt",
            // GitHub's `sub` names repository, environment or ref: what the audit log shows.
            userClaim: "sub",
            boundAudiences: [ci.audience],
            // Globs, for the pull-request ref in job_workflow_ref; the other values hold no `*`.
            boundClaimsType: "glob",
            boundClaims: { repository: ci.repository, ...claims },
            tokenPolicies: roleTokenPolicies,
            tokenTtl: 900,
          },
          { ...resourceOpts, dependsOn: [...policies, jwt] },
        );
      // A pull request's workflow runs from refs/pull/<n>/merge; only main may apply.
      role("ci-preview", ci.previewPolicies, {
        job_workflow_ref: `${ci.repository}/${CI_WORKFLOWS.preview}@*`,
        environment: environments.preview,
      });
      role("ci-apply", ci.applyPolicies, {
        ref: `refs/heads/${ci.branch}`,
        job_workflow_ref: `${ci.repository}/${CI_WORKFLOWS.apply}@refs/heads/${ci.branch}`,
        environment: environments.apply,
      });
    }

    this.kubernetesAuthPath = kubernetes.path;
    this.kvMount = kv.path;
    this.registerOutputs({
      policyNames: this.policyNames,
      kubernetesAuthPath: this.kubernetesAuthPath,
      kvMount: this.kvMount,
    });
  }
}
