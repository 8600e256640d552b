/**
 * `distributor validate` (SPEC §9): config, sources and planned outputs, without
 * touching any destination. Throws the first DistributorError met (config,
 * a source bundle overlapping a destination root, source_invalid,
 * output_collision, transform_failed).
 */
import { openBundle } from "../bundle/verify.js";
import { loadConfig, noSourceError } from "../config/load.js";
import type { Config } from "../config/types.js";
import type { SourceIdentity } from "../model.js";
import { planOutputs } from "../transform/planned-outputs.js";
import { assertSourceApart } from "./_source-apart.js";

export interface ValidateOptions {
  config?: Config;
  configFile?: string;
  cwd?: string;
  env?: NodeJS.ProcessEnv;
  /** Source directory for every pipeline (as `run --source`). */
  source?: string;
}

export interface ValidateReport {
  ok: true;
  config: string;
  pipelines: {
    pipeline_id: string;
    destinations: string[];
    source: SourceIdentity;
    files: number;
    outputs: number;
  }[];
}

export async function validate(options: ValidateOptions = {}): Promise<ValidateReport> {
  const config =
    options.config ??
    (await loadConfig({ file: options.configFile, cwd: options.cwd, env: options.env }));
  const pipelines: ValidateReport["pipelines"] = [];
  for (const pipeline of config.pipelines.values()) {
    const dir = options.source ?? pipeline.source;
    if (!dir) throw noSourceError(pipeline.id);
    for (const id of pipeline.destinations) {
      const destination = config.destinations.get(id);
      if (destination !== undefined) assertSourceApart(pipeline.id, dir, destination);
    }
    const bundle = await openBundle(dir);
    // Verifies the bundle while it renders (see planOutputs).
    const outputs = await planOutputs(bundle, pipeline);
    pipelines.push({
      pipeline_id: pipeline.id,
      destinations: pipeline.destinations,
      source: bundle.identity,
      files: bundle.files.length,
      outputs: outputs.length,
    });
  }
  return { ok: true, config: config.file, pipelines };
}
