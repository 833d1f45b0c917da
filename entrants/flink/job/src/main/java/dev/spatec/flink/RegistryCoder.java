package dev.spatec.flink;

import java.io.DataInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.avro.Schema;
import org.apache.flink.formats.avro.SchemaCoder;

/**
 * Reads the Confluent wire framing (a 0 byte, then the writer schema's id
 * as a big-endian u32) and fetches that schema from a registry's REST API
 * once per id. Flink's own coder for this wraps Confluent's client, which
 * Maven Central does not serve; the Avro decoding after the framing is
 * still Flink's.
 */
public final class RegistryCoder implements SchemaCoder {
    /** Finds a writer schema by its registry id. */
    interface Lookup {
        /** The schema registered under id. */
        Schema byId(int id) throws IOException;
    }

    private final Lookup lookup;
    private final Map<Integer, Schema> schemas = new HashMap<>();

    RegistryCoder(Lookup lookup) {
        this.lookup = lookup;
    }

    @Override
    public Schema readSchema(InputStream in) throws IOException {
        DataInputStream data = new DataInputStream(in);
        int magic = data.readUnsignedByte();
        if (magic != 0) {
            throw new IOException("a message that is not Confluent-framed: its first byte is " + magic + ", not 0");
        }
        int id = data.readInt();
        Schema s = schemas.get(id);
        if (s == null) {
            s = lookup.byId(id);
            schemas.put(id, s);
        }
        return s;
    }

    @Override
    public void writeSchema(Schema schema, OutputStream out) {
        throw new UnsupportedOperationException("the job reads the workload; it writes no Avro");
    }

    /** Makes a coder that asks the registry at url, in each task that decodes. */
    public static final class Provider implements SchemaCoder.SchemaCoderProvider {
        private static final long serialVersionUID = 1L;
        private final String url;

        /** A provider of coders that ask the registry at url (no trailing slash). */
        public Provider(String url) {
            this.url = url;
        }

        @Override
        public SchemaCoder get() {
            return new RegistryCoder(new Http(url));
        }
    }

    /** GET {url}/schemas/ids/{id}, as Confluent's REST API has it. */
    static final class Http implements Lookup {
        private final String url;
        private final HttpClient client = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(10)).build();
        private final ObjectMapper json = new ObjectMapper();

        Http(String url) {
            this.url = url;
        }

        @Override
        public Schema byId(int id) throws IOException {
            URI uri = URI.create(url + "/schemas/ids/" + id);
            HttpResponse<String> resp;
            try {
                resp = client.send(HttpRequest.newBuilder(uri).timeout(Duration.ofSeconds(30)).GET().build(),
                        HttpResponse.BodyHandlers.ofString());
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IOException("fetching schema " + id + " from " + uri + ": interrupted", e);
            }
            if (resp.statusCode() != 200) {
                throw new IOException("the registry answered " + resp.statusCode() + " for schema " + id + " at " + uri
                        + ": " + resp.body());
            }
            JsonNode schema = json.readTree(resp.body()).get("schema");
            if (schema == null || !schema.isTextual()) {
                throw new IOException("the registry's answer for schema " + id + " at " + uri + " has no schema: "
                        + resp.body());
            }
            return new Schema.Parser().parse(schema.asText());
        }
    }
}
