/**
 * The Gemini API (v1beta) request bodies the gateway accepts on its Gemini routes. The top
 * level is checked here; parts are checked one by one during translation (request.ts), so
 * an error names the exact part. Unknown fields are let through and ignored.
 */
import { z } from '../../shared/validation';

const nonEmpty = () => z.string().check(z.minLength(1));
const object = () => z.record(z.string(), z.unknown());

export const textPartSchema = z.looseObject({ text: z.string() });
export const inlineDataSchema = z.looseObject({ mimeType: nonEmpty(), data: z.string() });
export const fileDataSchema = z.looseObject({ mimeType: z.optional(z.string()), fileUri: nonEmpty() });
export const functionCallSchema = z.looseObject({ name: nonEmpty(), args: z.optional(object()), id: z.optional(z.string()) });
export const functionResponseSchema = z.looseObject({ name: nonEmpty(), response: z.optional(object()), id: z.optional(z.string()) });

const part = z.record(z.string(), z.unknown());
export type GeminiInboundPart = z.infer<typeof part>;

export const contentSchema = z.looseObject({
  role: z.optional(z.enum(['user', 'model', 'function', 'tool'])),
  parts: z.array(part),
});
export type GeminiInboundContent = z.infer<typeof contentSchema>;

const functionDeclaration = z.looseObject({
  name: nonEmpty(),
  description: z.optional(z.string()),
  parameters: z.optional(object()),
  parametersJsonSchema: z.optional(object()),
});
export type FunctionDeclaration = z.infer<typeof functionDeclaration>;

export const generationConfigSchema = z.looseObject({
  temperature: z.optional(z.number().check(z.gte(0), z.lte(2))),
  topP: z.optional(z.number().check(z.gte(0), z.lte(1))),
  topK: z.optional(z.int().check(z.gte(0))),
  candidateCount: z.optional(z.int().check(z.gte(1))),
  maxOutputTokens: z.optional(z.int().check(z.gte(1))),
  stopSequences: z.optional(z.array(z.string())),
  seed: z.optional(z.int()),
  presencePenalty: z.optional(z.number()),
  frequencyPenalty: z.optional(z.number()),
  responseMimeType: z.optional(z.string()),
  responseSchema: z.optional(object()),
  responseJsonSchema: z.optional(object()),
});

export const generateContentSchema = z.looseObject({
  contents: z.array(contentSchema).check(z.minLength(1)),
  systemInstruction: z.optional(z.looseObject({ role: z.optional(z.string()), parts: z.array(part) })),
  tools: z.optional(z.array(z.looseObject({ functionDeclarations: z.optional(z.array(functionDeclaration)) }))),
  toolConfig: z.optional(
    z.looseObject({
      functionCallingConfig: z.optional(
        z.looseObject({
          mode: z.optional(z.enum(['MODE_UNSPECIFIED', 'AUTO', 'ANY', 'NONE', 'VALIDATED'])),
          allowedFunctionNames: z.optional(z.array(nonEmpty())),
        }),
      ),
    }),
  ),
  generationConfig: z.optional(generationConfigSchema),
  safetySettings: z.optional(z.array(z.looseObject({ category: z.string(), threshold: z.string() }))),
  cachedContent: z.optional(z.string()),
});
export type GenerateContentRequest = z.infer<typeof generateContentSchema>;

/** `:countTokens` takes `contents` or a whole `generateContentRequest` (which then names its model). */
export const countTokensSchema = z.looseObject({
  contents: z.optional(z.array(contentSchema)),
  generateContentRequest: z.optional(z.looseObject({ ...generateContentSchema.shape, model: z.optional(z.string()) })),
});
export type CountTokensRequest = z.infer<typeof countTokensSchema>;

const embedContent = z.looseObject({
  model: z.optional(z.string()),
  content: z.looseObject({ parts: z.array(part).check(z.minLength(1)) }),
  taskType: z.optional(z.string()),
  title: z.optional(z.string()),
  outputDimensionality: z.optional(z.int().check(z.gte(1))),
});
export const embedContentSchema = embedContent;
export type EmbedContentRequest = z.infer<typeof embedContent>;

export const batchEmbedContentsSchema = z.looseObject({ requests: z.array(embedContent).check(z.minLength(1)) });
export type BatchEmbedContentsRequest = z.infer<typeof batchEmbedContentsSchema>;
