// CI's identities on the state bucket and the secrets keys, through Workload Identity Federation:
// GitHub's OIDC token of a job is exchanged for a short-lived Google token, so no service-account
// key exists to leak. Each kind of run has its own pool (a pool's principals are pool-wide, so one
// provider's looser condition could otherwise reach another's grants), each pool one provider whose
// attribute condition admits only this repository (by id: a renamed or re-created repository of the
// same name gets nothing) and only the workflow that kind belongs to. Within a pool, a grant names
// one GitHub environment through the token's subject (`repo:<owner>/<name>:environment:<env>`).
//
// What each may do (docs/credentials.md):
// - preview-<env>: read the bucket, decrypt with that environment's app key; write nothing.
// - apply (<env>, main.yml on main): also write its own app stack's state objects; encrypt and decrypt
//   with that environment's app key.
// - drift (<env>, drift.yml on main; opt-in): read the bucket, write the foundation stack's CLI lease,
//   decrypt with that environment's foundation key (drift reads the talosconfig output).
// No identity gets the foundation key except drift, and none may write the foundation's state.
import * as gcp from "@pulumi/gcp";
import * as pulumi from "@pulumi/pulumi";
import type { SecretsKey, SecretsKeyLayer } from "./stateBucket";

/** GitHub Actions' OIDC issuer. */
export const GITHUB_ISSUER = "https://token.actions.githubusercontent.com";

/** The Pulumi projects whose stacks live in the bucket (their Pulumi.yaml `name`). */
export const FOUNDATION_PROJECT = "talos-platform";
export const APP_PROJECT = "talos-platform-app";

/** The workflow files each kind of run is bound to. */
export const WORKFLOWS = {
  preview: ".github/workflows/pull-request.yml",
  apply: ".github/workflows/main.yml",
  drift: ".github/workflows/drift.yml",
} as const;

/** The pool (and GitHub environment prefix) of each kind of run. */
export const POOLS = { preview: "github-preview", apply: "github-apply", drift: "github-drift" };

/** Inputs of {@link CiIdentities}. */
export interface CiIdentitiesArgs {
  readonly project: string;
  readonly bucketName: pulumi.Input<string>;
  /** `owner/name`, as in the token's `repository` and `sub` claims. */
  readonly repository: string;
  readonly repositoryId: string;
  readonly repositoryOwnerId: string;
  /** The branch whose workflows may apply (and run drift). */
  readonly branch?: string;
  /** The per-stack keys, by layer, then environment. */
  readonly keys: Record<SecretsKeyLayer, Record<string, SecretsKey>>;
  readonly environments: readonly string[];
  /** Whether the drift workflow gets an identity (it needs the foundation key). */
  readonly drift: boolean;
  readonly provider: gcp.Provider;
}

/** The object paths a stack's runs write in a DIY (gs://) backend, as IAM resource names. */
export function stackObjectPrefixes(project: string, stack: string): string[] {
  // Pulumi's project-scoped DIY layout: .pulumi/stacks/<project>/<stack>.json (and .json.bak,
  // .json.gz), .pulumi/history/<project>/<stack>/…, .pulumi/backups/<project>/<stack>/…,
  // .pulumi/locks/organization/<project>/<stack>/<id>.json (the lock is named after the stack's
  // fully qualified name, whose organization is always "organization" in a DIY backend:
  // pkg/backend/diy/lock.go, stackLockDir; backend.go, FullyQualifiedName); and this CLI's lease.
  // The engine tier checks every file a real `up` writes against these (lifecycle.engine.ts).
  return [
    `.pulumi/stacks/${project}/${stack}.json`,
    `.pulumi/history/${project}/${stack}/`,
    `.pulumi/backups/${project}/${stack}/`,
    `.pulumi/locks/organization/${project}/${stack}/`,
    leaseObject(project, stack),
  ];
}

/** The CLI's lease of a stack in a gs:// backend (automation/lock.ts). */
export function leaseObject(project: string, stack: string): string {
  return `.platform-locks/${project}/${stack}.lock`;
}

/** An IAM condition expression admitting only objects of the bucket whose names start with `prefixes`. */
export function objectCondition(bucket: string, prefixes: readonly string[]): string {
  return prefixes
    .map((prefix) => `resource.name.startsWith("projects/_/buckets/${bucket}/objects/${prefix}")`)
    .join(" || ");
}

/** The provider's attribute condition for one kind of run. */
export function attributeCondition(
  kind: keyof typeof WORKFLOWS,
  args: Pick<CiIdentitiesArgs, "repository" | "repositoryId" | "repositoryOwnerId" | "branch">,
): string {
  const repo = [
    `assertion.repository_id == "${args.repositoryId}"`,
    `assertion.repository_owner_id == "${args.repositoryOwnerId}"`,
  ];
  const workflow = `${args.repository}/${WORKFLOWS[kind]}`;
  if (kind === "preview") {
    return [
      ...repo,
      `assertion.event_name == "pull_request"`,
      `assertion.job_workflow_ref.startsWith("${workflow}@")`,
    ].join(" && ");
  }
  const ref = `refs/heads/${args.branch ?? "main"}`;
  return [
    ...repo,
    `assertion.ref == "${ref}"`,
    `assertion.job_workflow_ref == "${workflow}@${ref}"`,
  ].join(" && ");
}

/** The GitHub environment each kind of run uses for `environment`. */
export function githubEnvironment(kind: keyof typeof WORKFLOWS, environment: string): string {
  return kind === "apply" ? environment : `${kind}-${environment}`;
}

/** The pools, providers and grants of CI's identities. */
export class CiIdentities extends pulumi.ComponentResource {
  /** The provider resource name of each kind, for `workload_identity_provider` in the workflows. */
  public readonly providers: Partial<Record<keyof typeof WORKFLOWS, pulumi.Output<string>>> = {};

  constructor(name: string, args: CiIdentitiesArgs, opts?: pulumi.ComponentResourceOptions) {
    super("platform:gcp:CiIdentities", name, {}, opts);
    const resourceOpts = { parent: this, provider: args.provider };
    const kinds = (["preview", "apply", "drift"] as const).filter(
      (kind) => kind !== "drift" || args.drift,
    );
    const bucket = pulumi.output(args.bucketName);
    for (const kind of kinds) {
      const pool = new gcp.iam.WorkloadIdentityPool(
        `${name}-${kind}-pool`,
        {
          project: args.project,
          workloadIdentityPoolId: POOLS[kind],
          displayName: `GitHub ${kind}`,
          description: `${args.repository}: ${WORKFLOWS[kind]}`,
        },
        resourceOpts,
      );
      const provider = new gcp.iam.WorkloadIdentityPoolProvider(
        `${name}-${kind}-provider`,
        {
          project: args.project,
          workloadIdentityPoolId: pool.workloadIdentityPoolId,
          workloadIdentityPoolProviderId: "github",
          displayName: "GitHub Actions",
          attributeMapping: {
            "google.subject": "assertion.sub",
            "attribute.repository_id": "assertion.repository_id",
            "attribute.job_workflow_ref": "assertion.job_workflow_ref",
          },
          attributeCondition: attributeCondition(kind, args),
          oidc: { issuerUri: GITHUB_ISSUER },
        },
        resourceOpts,
      );
      this.providers[kind] = provider.name;

      for (const environment of args.environments) {
        const member = pulumi.interpolate`principal://iam.googleapis.com/${pool.name}/subject/repo:${args.repository}:environment:${githubEnvironment(kind, environment)}`;
        const prefix = `${name}-${kind}-${environment}`;
        // Reading every state object: the DIY backend lists and reads stacks, and a stack's secrets
        // stay ciphertext under keys this identity is not granted.
        new gcp.storage.BucketIAMMember(
          `${prefix}-read`,
          { bucket, role: "roles/storage.objectViewer", member },
          resourceOpts,
        );
        // A preview writes nothing: the engine takes no lock for it and the CLI keeps a preview's
        // lease in the checkout (automation/lock.ts, lockStack). Drift takes the foundation
        // stack's lease beside its state, so that no roll starts while it reads.
        if (kind !== "preview") {
          const layer = kind === "drift" ? FOUNDATION_PROJECT : APP_PROJECT;
          const writable =
            kind === "apply"
              ? stackObjectPrefixes(APP_PROJECT, environment)
              : [leaseObject(layer, environment)];
          new gcp.storage.BucketIAMMember(
            `${prefix}-write`,
            {
              bucket,
              role: "roles/storage.objectUser",
              member,
              condition: {
                title: `${kind}-${environment}-own-objects`,
                description: `Only ${layer}/${environment}'s ${kind === "apply" ? "state and lease" : "lease"}`,
                expression: bucket.apply((b) => objectCondition(b, writable)),
              },
            },
            resourceOpts,
          );
        }
        const key =
          kind === "drift" ? args.keys.foundation[environment] : args.keys.app[environment];
        new gcp.kms.CryptoKeyIAMMember(
          `${prefix}-key`,
          {
            cryptoKeyId: key.id,
            role:
              kind === "apply"
                ? "roles/cloudkms.cryptoKeyEncrypterDecrypter"
                : "roles/cloudkms.cryptoKeyDecrypter",
            member,
          },
          resourceOpts,
        );
      }
    }
    this.registerOutputs({ providers: this.providers });
  }
}
