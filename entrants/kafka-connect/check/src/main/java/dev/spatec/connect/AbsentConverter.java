package dev.spatec.connect;

import java.util.Map;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.connect.data.Schema;
import org.apache.kafka.connect.data.SchemaAndValue;
import org.apache.kafka.connect.storage.Converter;

/**
 * What a converter class the image carries in its plugin.path, and this
 * classpath lacks, is named by when a CLASS-typed setting is handed to
 * Connect's definitions: their validators ask that the class be a
 * concrete, instantiable {@link Converter}, which the class in the image
 * is. It converts nothing; its definition is {@link StandIns}'.
 */
public final class AbsentConverter implements Converter {
    @Override
    public void configure(Map<String, ?> configs, boolean isKey) {
        throw new UnsupportedOperationException("only the class name of a converter this classpath lacks");
    }

    @Override
    public byte[] fromConnectData(String topic, Schema schema, Object value) {
        throw new UnsupportedOperationException("only the class name of a converter this classpath lacks");
    }

    @Override
    public SchemaAndValue toConnectData(String topic, byte[] value) {
        throw new UnsupportedOperationException("only the class name of a converter this classpath lacks");
    }

    @Override
    public ConfigDef config() {
        return new ConfigDef();
    }

    @Override
    public String version() {
        return "absent";
    }
}
