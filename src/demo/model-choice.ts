/**
 * Which model `switchboard demo --models` runs, from the environment: the
 * first provider whose API key is set. Pure (the environment is passed in);
 * the key's value is never kept, only which variable held it.
 */

/** A provider the demo knows: the key it reads, its AI SDK package and export, and the model it runs. */
export interface DemoProvider {
  /** The environment variable holding the API key (read by the provider package itself). */
  keyVariable: string;
  /** The AI SDK provider package (an optional peer: installed by the user). */
  packageName: string;
  /** The package's provider export. */
  exportName: string;
  /** The model the demo runs (a small, cheap one, priced in `DEFAULT_PRICING`). */
  model: string;
}

/** The providers `demo --models` tries, in order. */
export const DEMO_PROVIDERS: readonly DemoProvider[] = Object.freeze([
  { keyVariable: 'OPENAI_API_KEY', packageName: '@ai-sdk/openai', exportName: 'openai', model: 'gpt-4o-mini' },
  {
    keyVariable: 'ANTHROPIC_API_KEY',
    packageName: '@ai-sdk/anthropic',
    exportName: 'anthropic',
    model: 'claude-3-5-haiku-latest',
  },
  {
    keyVariable: 'GOOGLE_GENERATIVE_AI_API_KEY',
    packageName: '@ai-sdk/google',
    exportName: 'google',
    model: 'gemini-2.5-flash',
  },
]);

/** The provider whose API key is set in `env` (the first in `DEMO_PROVIDERS`), or null when none is. */
export function chooseDemoProvider(env: Readonly<Record<string, string | undefined>>): DemoProvider | null {
  for (const provider of DEMO_PROVIDERS) {
    const key = env[provider.keyVariable];
    if (typeof key === 'string' && key.trim().length > 0) return provider;
  }
  return null;
}

/** The stderr line when no key is set: the demo runs its scripted agents instead. */
export function noKeyLine(): string {
  const names = DEMO_PROVIDERS.map((p) => p.keyVariable);
  return `switchboard demo --models: no model API key is set (${names.slice(0, -1).join(', ')} or ${names.at(-1)}): running the scripted DEMO agents instead`;
}

/** What the demo says it runs: the provider package, the model, and which variable holds the key (never the key). */
export function providerLine(provider: DemoProvider): string {
  return `Model agents: ${provider.packageName} ${provider.model} (the key from ${provider.keyVariable})`;
}
