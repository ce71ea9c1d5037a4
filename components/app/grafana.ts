import * as pulumi from "@pulumi/pulumi";
import * as grafana from "@pulumiverse/grafana";
import type { AppSpec } from "../config/app";

/** Inputs of a {@link GrafanaConfiguration}. */
export interface GrafanaConfigurationArgs {
  readonly settings: NonNullable<AppSpec["grafana"]>;
  /** A service-account token (secret). */
  readonly auth: pulumi.Output<string>;
}

/** Grafana's folders, data sources (from the stack file) and dashboards (JSON models in the repo). */
export class GrafanaConfiguration extends pulumi.ComponentResource {
  /** Dashboard titles by folder uid. */
  public readonly dashboards: Record<string, string[]>;

  constructor(
    name: string,
    args: GrafanaConfigurationArgs,
    opts?: pulumi.ComponentResourceOptions,
  ) {
    super("platform:app:GrafanaConfiguration", name, {}, opts);
    const { settings } = args;
    const provider = new grafana.Provider(
      `${name}-provider`,
      { url: settings.url, auth: args.auth },
      { parent: this },
    );
    const resourceOpts = { parent: this, provider };

    for (const source of settings.dataSources) {
      new grafana.oss.DataSource(
        `${name}-datasource-${source.name.toLowerCase().replace(/[^a-z0-9]+/g, "-")}`,
        {
          name: source.name,
          type: source.type,
          url: source.url,
          isDefault: source.isDefault,
          ...(source.jsonData ? { jsonDataEncoded: JSON.stringify(source.jsonData) } : {}),
        },
        resourceOpts,
      );
    }
    this.dashboards = {};
    for (const folder of settings.folders) {
      const created = new grafana.oss.Folder(
        `${name}-folder-${folder.uid}`,
        { uid: folder.uid, title: folder.title },
        resourceOpts,
      );
      this.dashboards[folder.uid] = folder.dashboards.map((d) => d.title);
      for (const dashboard of folder.dashboards) {
        const base = dashboard.file
          .split("/")
          .pop()!
          .replace(/\.json$/, "");
        new grafana.oss.Dashboard(
          `${name}-dashboard-${folder.uid}-${base}`,
          {
            configJson: dashboard.json,
            folder: created.uid,
            overwrite: true,
            message: `From ${dashboard.file}`,
          },
          resourceOpts,
        );
      }
    }
    this.registerOutputs({ dashboards: this.dashboards });
  }
}
