/**
 * The model names this server answers to: its own id (--model-name, default chorus-<config name>) and the config's
 * model_aliases. A request naming any other model is refused with 404 model_not_found, as OpenAI and vLLM do:
 * answering `gpt-4o` with a tiny random pipeline would tell the client it got what it asked for.
 */
import type { StageGraph } from '../common/graph.ts';
import { ErrorCodes } from '../common/errors.ts';
import { ClientInputError } from './validate.ts';

/** Every name served, the id first (what /v1/models lists; the aliases follow the graph through a hot reload). */
export function servedModelNames(modelName: string, graph: StageGraph): string[] {
  return [modelName, ...(graph.modelAliases ?? []).filter((a) => a !== modelName)];
}

/**
 * The name to echo in the response: the one asked for (an alias is answered under the name the client used, as
 * vLLM's served names are), or the id when it names none. Throws CHORUS_ERR_MODEL_NOT_FOUND (404) otherwise.
 */
export function resolveModel(asked: string | undefined, served: readonly string[], param = 'model'): string {
  if (asked === undefined) return served[0];
  if (served.includes(asked)) return asked;
  const names = served.map((n) => `"${n}"`).join(', ');
  throw new ClientInputError(
    `The model "${asked.slice(0, 256)}" does not exist on this server: it serves ${names} (GET /v1/models). Send ` +
      `one of those as ${param}, leave ${param} out, or add the name to model_aliases in the config.`,
    param,
    ErrorCodes.MODEL_NOT_FOUND,
  );
}
