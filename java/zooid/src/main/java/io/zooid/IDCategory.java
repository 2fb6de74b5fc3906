package io.zooid;

import java.util.Objects;

/**
 * A named pool of IDs: the path of its pool node in ZooKeeper, such as
 * {@code /eventpublish/idgen/did}.
 *
 * <p>The path must be absolute, name a node below the root, not end with {@code /}, and have no
 * empty, {@code .} or {@code ..} segments, no NUL and no character ZooKeeper refuses in a path
 * (U+0001 to U+001F, U+007F to U+009F, U+D800 to U+F8FF, U+FFF0 to U+FFFF: so no character
 * outside the Basic Multilingual Plane either, whose surrogates fall in that range), as the
 * native core checks on every store. Immutable and thread-safe.
 */
public final class IDCategory {
    private final String name;

    /**
     * A category at {@code name}.
     *
     * @throws NullPointerException if {@code name} is null
     * @throws IllegalArgumentException if {@code name} is not a valid category path
     */
    public IDCategory(String name) {
        Objects.requireNonNull(name, "name");
        String problem = problem(name);
        if (problem != null) {
            throw new IllegalArgumentException("category path \"" + name + "\" " + problem);
        }
        this.name = name;
    }

    private static String problem(String path) {
        if (!path.startsWith("/")) {
            return "must start with '/'";
        }
        if (path.length() == 1) {
            return "must name a node below the root";
        }
        if (path.endsWith("/")) {
            return "must not end with '/'";
        }
        if (path.indexOf('\0') >= 0) {
            return "must not contain NUL";
        }
        for (int i = 0; i < path.length(); i++) {
            char c = path.charAt(i);
            if (c >= '\u0001' && c <= '\u001f' || c >= '\u007f' && c <= '\u009f'
                    || c >= '\ud800' && c <= '\uf8ff' || c >= '\ufff0') {
                return String.format(
                        "has character U+%04X at index %d, which ZooKeeper does not allow in a path", (int) c, i);
            }
        }
        for (String segment : path.substring(1).split("/", -1)) {
            if (segment.isEmpty() || segment.equals(".") || segment.equals("..")) {
                return "has an empty, '.' or '..' segment";
            }
            if (isPoolChild(segment)) {
                return "has the segment \"" + segment
                        + "\", a name zooid keeps for the nodes below a pool node";
            }
        }
        return null;
    }

    /**
     * Whether {@code name} is one zooid keeps for the nodes below a pool node (hole nodes, block
     * claims, receipts): a category there would be read as part of the category above it.
     */
    private static boolean isPoolChild(String name) {
        return name.equals("zooid-holes") || name.equals("zooid-returned")
                || isNumbered(name, "zooid-blocks-") || isNumbered(name, "zooid-free-");
    }

    private static boolean isNumbered(String name, String prefix) {
        if (!name.startsWith(prefix) || name.length() == prefix.length()) {
            return false;
        }
        for (int i = prefix.length(); i < name.length(); i++) {
            char c = name.charAt(i);
            if (c < '0' || c > '9') {
                return false;
            }
        }
        return true;
    }

    /** The pool node's path, which is also the category's name. */
    public String getName() {
        return name;
    }

    @Override
    public boolean equals(Object other) {
        return other instanceof IDCategory && ((IDCategory) other).name.equals(name);
    }

    @Override
    public int hashCode() {
        return name.hashCode();
    }

    @Override
    public String toString() {
        return name;
    }
}
