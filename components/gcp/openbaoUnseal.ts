import * as gcp from "@pulumi/gcp";
import * as pulumi from "@pulumi/pulumi";
import type { GcpSpec, OpenbaoSpec } from "../spec/types";
import { jwksFromSigningKey } from "./jwks";

/** Inputs of an {@link OpenbaoUnsealKey}. */
export interface OpenbaoUnsealKeyArgs {
  readonly gcp: GcpSpec;
  readonly settings: OpenbaoSpec;
  readonly clusterName: string;
  readonly provider: gcp.Provider;
  /**
   * The cluster's service-account token issuer (workloadIdentity): its URL (the API endpoint, Talos'
   * `service-account-issuer`) and the key tokens are signed with (secret; only its public half is used).
   */
  readonly issuer?: { readonly url: string; readonly signingKey: pulumi.Output<string> };
  /** The existing key file's JSON (existingKey; secret). */
  readonly existingKey?: pulumi.Output<string>;
}

/** Where OpenBao's pod mounts its projected service-account token for GCP (workloadIdentity). */
const WORKLOAD_IDENTITY_TOKEN_PATH = "/var/run/secrets/openbao/gcp/token";

/** A Workload Identity pool or provider ID: 4-32 lowercase letters, digits and hyphens. */
function workloadIdentityId(clusterName: string, suffix: string): string {
  const id = `${clusterName}-${suffix}`.slice(0, 32).replace(/-+$/, "");
  return id.length >= 4 ? id : `${id}-wif`;
}

/**
 * The credential configuration OpenBao's Google client reads (GOOGLE_APPLICATION_CREDENTIALS): trade
 * the pod's projected Kubernetes token (audience: the provider) for a federated GCP token.
 */
function externalAccountCredentials(providerName: string): string {
  return JSON.stringify({
    type: "external_account",
    audience: `//iam.googleapis.com/${providerName}`,
    subject_token_type: "urn:ietf:params:oauth:token-type:jwt",
    token_url: "https://sts.googleapis.com/v1/token",
    credential_source: { file: WORKLOAD_IDENTITY_TOKEN_PATH, format: { type: "text" } },
  });
}

/** What OpenBao's `seal "gcpckms"` stanza needs (credentials apart). */
export interface SealStanza {
  readonly project: string;
  readonly region: string;
  readonly key_ring: string;
  readonly crypto_key: string;
}

/**
 * OpenBao's server configuration for the seal, HCL: the `seal "gcpckms"` stanza (credentials from
 * GOOGLE_APPLICATION_CREDENTIALS), after, with a KMS plugin, the `plugin "kms" "gcpckms"` block
 * OpenBao 2.7 and later need: they no longer build the gcpckms seal in, and the seal stanza's name
 * must match the plugin block's (the plugin then shadows any built-in seal). OpenBao downloads the
 * plugin's OCI image into `plugin_directory` at startup and checks the binary's SHA-256.
 */
export function sealConfig(
  seal: SealStanza,
  plugin?: { readonly image: string; readonly version: string; readonly sha256sum: string },
): string {
  const block = (head: string, values: Record<string, string>) => {
    const width = Math.max(...Object.keys(values).map((k) => k.length));
    const body = Object.entries(values).map(
      ([k, v]) => `  ${k.padEnd(width)} = ${JSON.stringify(v)}`,
    );
    return [`${head} {`, ...body, "}", ""].join("\n");
  };
  return [
    ...(plugin
      ? [
          block('plugin "kms" "gcpckms"', {
            image: plugin.image,
            version: plugin.version,
            sha256sum: plugin.sha256sum,
          }),
        ]
      : []),
    block('seal "gcpckms"', { ...seal }),
  ].join("\n");
}

/** The roles OpenBao's gcpckms seal needs on its key: encrypt/decrypt, and reading the key's metadata. */
const UNSEAL_ROLES = [
  "roles/cloudkms.cryptoKeyEncrypterDecrypter",
  "roles/cloudkms.viewer",
] as const;

/** A GCP service-account ID (6–30 characters) for the cluster's unseal identity. */
function unsealAccountId(clusterName: string): string {
  const id = `${clusterName}-openbao-unseal`.slice(0, 30).replace(/-+$/, "");
  return id.length >= 6 ? id : `${id}-unseal`;
}

/**
 * The KMS key OpenBao auto-unseals with, and the identity allowed to use it: a key ring and key
 * (both protected: a key ring can never be deleted, and losing the key loses OpenBao's data), and
 * exactly the roles the seal needs on that key, for one of three identities (`openbao.credentials`):
 * - `serviceAccountKey`: a service account and its key (secret) created here. Organisations with the
 *   policy iam.disableServiceAccountKeyCreation (enforced by default since 2024) refuse the key.
 * - `workloadIdentity`: no key at all. A Workload Identity pool trusts the cluster's service-account
 *   tokens (issuer: the API endpoint; keys: the cluster's signing key's public half, so the issuer
 *   need not be reachable from Google), and the roles go to OpenBao's Kubernetes service account.
 * - `existingKey`: a key made elsewhere, from the credentials store; the roles go to its account.
 */
export class OpenbaoUnsealKey extends pulumi.ComponentResource {
  /** Values for the seal stanza. */
  public readonly seal: pulumi.Output<SealStanza>;
  /** The seal's server configuration (HCL): the plugin block (OpenBao 2.7+) and the seal stanza. */
  public readonly sealConfig: pulumi.Output<string>;
  /** The JSON OpenBao authenticates with (secret): a key file, or an external-account configuration. */
  public readonly credentials: pulumi.Output<string>;
  /** The IAM member holding the roles (`serviceAccount:…` or `principal://…`). */
  public readonly member: pulumi.Output<string>;

  constructor(name: string, args: OpenbaoUnsealKeyArgs, opts?: pulumi.ComponentResourceOptions) {
    super("platform:gcp:OpenbaoUnsealKey", name, {}, opts);
    const { settings } = args;
    const resourceOpts = { parent: this, provider: args.provider };

    const keyRing = new gcp.kms.KeyRing(
      `${name}-key-ring`,
      { name: settings.keyRing, location: settings.location, project: args.gcp.project },
      { ...resourceOpts, protect: true },
    );
    const key = new gcp.kms.CryptoKey(
      `${name}-key`,
      {
        name: settings.cryptoKey,
        keyRing: keyRing.id,
        purpose: "ENCRYPT_DECRYPT",
        rotationPeriod: settings.rotationPeriod,
        labels: { "talos-cluster": args.clusterName, purpose: "openbao-unseal" },
      },
      { ...resourceOpts, protect: true },
    );

    let credentials: pulumi.Output<string>;
    switch (settings.credentials) {
      case "serviceAccountKey": {
        const account = new gcp.serviceaccount.Account(
          `${name}-account`,
          {
            accountId: unsealAccountId(args.clusterName),
            displayName: `OpenBao auto-unseal (${args.clusterName})`,
            project: args.gcp.project,
          },
          resourceOpts,
        );
        this.member = pulumi.interpolate`serviceAccount:${account.email}`;
        const accountKey = new gcp.serviceaccount.Key(
          `${name}-account-key`,
          { serviceAccountId: account.name },
          resourceOpts,
        );
        // The provider hands the key file out base64-encoded; OpenBao wants the JSON itself.
        credentials = accountKey.privateKey.apply((encoded) =>
          Buffer.from(encoded, "base64").toString("utf8"),
        );
        break;
      }
      case "existingKey":
        this.member = pulumi.output(`serviceAccount:${settings.serviceAccountEmail!}`);
        credentials = required(args.existingKey, "the gcpUnsealCredentials credential");
        break;
      case "workloadIdentity": {
        const issuer = required(args.issuer, "the cluster's service-account issuer");
        const pool = new gcp.iam.WorkloadIdentityPool(
          `${name}-pool`,
          {
            project: args.gcp.project,
            // A deleted pool's ID stays taken for 30 days (GCP's soft delete): the stack may name another.
            workloadIdentityPoolId:
              settings.workloadIdentityPoolId ?? workloadIdentityId(args.clusterName, "openbao"),
            displayName: `OpenBao of ${args.clusterName}`.slice(0, 32),
            description: `Service-account tokens of Talos cluster ${args.clusterName}`,
          },
          resourceOpts,
        );
        const { namespace, name: serviceAccount } = settings.kubernetesServiceAccount;
        const subject = `system:serviceaccount:${namespace}:${serviceAccount}`;
        const provider = new gcp.iam.WorkloadIdentityPoolProvider(
          `${name}-pool-provider`,
          {
            project: args.gcp.project,
            workloadIdentityPoolId: pool.workloadIdentityPoolId,
            workloadIdentityPoolProviderId: workloadIdentityId(args.clusterName, "cluster"),
            displayName: "Kubernetes service accounts",
            attributeMapping: { "google.subject": "assertion.sub" },
            // Only OpenBao's service account may exchange its token.
            attributeCondition: `assertion.sub == "${subject}"`,
            oidc: {
              issuerUri: issuer.url,
              // The public half only: no secret leaves the cluster's PKI.
              jwksJson: pulumi.unsecret(issuer.signingKey.apply(jwksFromSigningKey)),
            },
          },
          resourceOpts,
        );
        this.member = pulumi.interpolate`principal://iam.googleapis.com/${pool.name}/subject/${subject}`;
        credentials = provider.name.apply(externalAccountCredentials);
        break;
      }
      default: {
        const unhandled: never = settings.credentials;
        throw new Error(`unknown openbao.credentials ${JSON.stringify(unhandled)}`);
      }
    }
    for (const role of UNSEAL_ROLES) {
      new gcp.kms.CryptoKeyIAMMember(
        `${name}-${role.split(".").pop()!.toLowerCase()}`,
        { cryptoKeyId: key.id, role, member: this.member },
        resourceOpts,
      );
    }

    const seal: SealStanza = {
      project: args.gcp.project,
      region: settings.location,
      key_ring: settings.keyRing,
      crypto_key: settings.cryptoKey,
    };
    this.seal = pulumi.output(seal);
    this.sealConfig = pulumi.output(sealConfig(seal, settings.kmsPlugin));
    this.credentials = pulumi.secret(credentials);
    this.registerOutputs({
      seal: this.seal,
      sealConfig: this.sealConfig,
      credentials: this.credentials,
      member: this.member,
    });
  }
}

function required<T>(value: T | undefined, what: string): T {
  if (value === undefined)
    throw new Error(`${what} is required (validation should have caught this)`);
  return value;
}
