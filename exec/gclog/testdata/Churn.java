import java.util.ArrayList;
import java.util.List;

// Churn allocates garbage while keeping a live set that grows to 24 MiB,
// then asks for a full collection, so a GC log shows young collections,
// committed growth, a live peak and a full collection. The gclog tests run
// it under each collector.
public class Churn {
    public static void main(String[] args) {
        List<byte[]> live = new ArrayList<>();
        long sink = 0;
        for (int i = 0; i < 400_000; i++) {
            byte[] b = new byte[1024];
            sink += b.length;
            if (i % 16 == 0 && live.size() < 24 * 1024) {
                live.add(new byte[1024]);
            }
        }
        System.gc();
        System.out.println(sink + " " + live.size());
    }
}
