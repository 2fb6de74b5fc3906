package io.zooid;

/** The category's pool node does not exist: create it with {@link IDGeneratorService#createCategory}. */
public class CategoryNotFoundException extends IDGeneratorException {
    private static final long serialVersionUID = 1L;

    public CategoryNotFoundException(String message, String category) {
        super(ErrorCode.NOT_FOUND, message, category);
    }
}
