import * as pulumi from "@pulumi/pulumi";
import * as vault from "@pulumi/vault";
import type { AppSecrets, AppSpec } from "../config/app";
import type { FoundationValues } from "./foundationRef";

/** Where CI's JWT auth method is mounted. */
export const CI_JWT_PATH = "jwt-github";

/** GitHub Actions' OIDC issuer. */
export const GITHUB_ACTIONS_ISSUER = "https://token.actions.githubusercontent.com";

/** Inputs of an {@link OpenbaoConfiguration}. */
export interface OpenbaoConfigurationArgs {
  readonly settings: AppSpec["openbao"];
  readonly secrets: AppSecrets;
  readonly foundation: pulumi.Output<FoundationValues>;
}

/** The provider login: a token (workstation) or CI's OIDC token through the JWT `<ci>-apply`/`-preview` role. */
export function providerArgs(
  settings: AppSpec["openbao"],
  secrets: AppSecrets,
): vault.ProviderArgs {
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

    const policies = settings.policies.map(
      (policy) =>
        new vault.Policy(
          `${name}-policy-${policy.name}`,
          { name: policy.name, policy: policy.hcl },
          resourceOpts,
        ),
    );
    this.policyNames = settings.policies.map((p) => p.name);
    // Roles name policies by string; depending on them makes a role never point at a missing policy.
    const afterPolicies = { ...resourceOpts, dependsOn: policies };

    const kubernetes = new vault.AuthBackend(
      `${name}-kubernetes`,
      {
        type: "kubernetes",
        path: settings.kubernetesAuthPath,
        description: "Kubernetes service accounts of the cluster",
      },
      resourceOpts,
    );
    new vault.kubernetes.AuthBackendConfig(
      `${name}-kubernetes-config`,
      {
        backend: kubernetes.path,
        kubernetesHost: args.foundation.endpoint,
        kubernetesCaCert: args.foundation.kubernetesCaCertificate,
        // OpenBao runs in this cluster and reviews tokens with its own service account.
        disableIssValidation: true,
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
      resourceOpts,
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
        resourceOpts,
      );
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
            userClaim: "repository",
            boundAudiences: [ci.audience],
            boundClaims: { repository: ci.repository, ...claims },
            tokenPolicies: roleTokenPolicies,
            tokenTtl: 900,
          },
          { ...resourceOpts, dependsOn: [...policies, jwt] },
        );
      role("ci-preview", ci.previewPolicies, {});
      role("ci-apply", ci.applyPolicies, { ref: `refs/heads/${ci.branch}` });
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
