package io.zooid.yarn.it;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.hadoop.mapreduce.TaskAttemptID;

/** What one task attempt wrote to its journal (see {@link JournalingMapper}). */
final class AttemptJournal {
    /** How the attempt's run ended. */
    enum End {
        /** run() returned. */
        END,
        /** run() threw. */
        FAILED,
        /** Neither: the attempt's JVM was stopped while it ran. */
        CUT
    }

    final TaskAttemptID attempt;
    final Map<String, String> facts;
    final List<Long> ids;
    final End end;
    /** Whether the example's cleanup() returned, so what the source held went back to the pool. */
    final boolean cleanedUp;
    /** Whether the example's cleanup() started (it may have pushed back before the JVM stopped). */
    final boolean cleanupBegan;

    private AttemptJournal(TaskAttemptID attempt, Map<String, String> facts, List<Long> ids, End end,
            boolean cleanupBegan, boolean cleanedUp) {
        this.cleanupBegan = cleanupBegan;
        this.attempt = attempt;
        this.facts = facts;
        this.ids = ids;
        this.end = end;
        this.cleanedUp = cleanedUp;
    }

    static AttemptJournal read(Path file) throws IOException {
        TaskAttemptID attempt = TaskAttemptID.forName(file.getFileName().toString());
        Map<String, String> facts = new HashMap<>();
        List<Long> ids = new ArrayList<>();
        End end = End.CUT;
        boolean cleanedUp = false;
        boolean cleanupBegan = false;
        String text = new String(Files.readAllBytes(file), StandardCharsets.UTF_8);
        // A killed attempt may leave a partial last line: only lines ended by '\n' count.
        text = text.substring(0, text.lastIndexOf('\n') + 1);
        for (String line : text.split("\n")) {
            if (line.equals("end")) {
                end = End.END;
            } else if (line.equals("failed")) {
                end = End.FAILED;
            } else if (line.equals("cleanup-begins")) {
                cleanupBegan = true;
            } else if (line.equals("cleanup")) {
                cleanedUp = true;
            } else if (line.startsWith("id ")) {
                ids.add(Long.parseLong(line.substring(3)));
            } else {
                int space = line.indexOf(' ');
                if (space > 0) {
                    facts.put(line.substring(0, space), line.substring(space + 1));
                }
            }
        }
        return new AttemptJournal(attempt, facts, Collections.unmodifiableList(ids), end, cleanupBegan, cleanedUp);
    }

    @Override
    public String toString() {
        return attempt + " (" + end + (cleanedUp ? " after cleanup" : cleanupBegan ? " in cleanup" : "") + ", " + ids.size() + " IDs, " + facts + ")";
    }
}
