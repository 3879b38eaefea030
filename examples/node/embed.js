// Embeds texts with Lightmind's EmbeddingService from Node.js.
//   node embed.js [address] "first text" "second text" ...
// Prints one JSON line: the model, the dimensions and each text's token count and first values.
// LIGHTMIND_API_KEY, when set, is sent as `authorization: Bearer <key>`.
"use strict";

const path = require("path");
const grpc = require("@grpc/grpc-js");
const protoLoader = require("@grpc/proto-loader");

const PROTO_ROOT = path.resolve(__dirname, "..", "..", "protos");

function loadService() {
  const definition = protoLoader.loadSync(
    path.join(PROTO_ROOT, "lightmind/embedding/v1/embedding_service.proto"),
    { includeDirs: [PROTO_ROOT], keepCase: true, longs: String, enums: String, defaults: true },
  );
  return grpc.loadPackageDefinition(definition).lightmind.embedding.v1.EmbeddingService;
}

function main() {
  const [address = "127.0.0.1:50051", ...texts] = process.argv.slice(2);
  const EmbeddingService = loadService();
  const client = new EmbeddingService(address, grpc.credentials.createInsecure());
  const metadata = new grpc.Metadata();
  if (process.env.LIGHTMIND_API_KEY) {
    metadata.set("authorization", `Bearer ${process.env.LIGHTMIND_API_KEY}`);
  }
  const deadline = new Date(Date.now() + 30000);
  const request = { texts: texts.length ? texts : ["hello from node"], input_type: "INPUT_TYPE_QUERY" };
  client.Embed(request, metadata, { deadline }, (err, reply) => {
    if (err) {
      console.error(`${grpc.status[err.code]}: ${err.details}`);
      process.exit(1);
    }
    console.log(JSON.stringify({
      model: reply.model,
      dimensions: reply.dimensions,
      embeddings: reply.embeddings.map((e) => ({
        token_count: e.token_count,
        first: e.values.slice(0, 3),
        length: e.values.length,
      })),
    }));
    client.close();
  });
}

main();
