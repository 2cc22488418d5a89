/** GitHub Models: chat completions under `/inference`, a GitHub token with the `models` scope as bearer; its catalog lives elsewhere. */
import { createOpenAICompatible } from '../_shared/openai-compatible';

// Source: https://docs.github.com/en/github-models/quickstart
export const githubModels = createOpenAICompatible({
  slug: 'github-models',
  name: 'GitHub Models',
  defaultBaseUrl: 'https://models.github.ai/inference',
  models: false,
});
