package shop;

import java.util.ArrayList;
import java.util.List;

public class ShoppingCart {
    private final List<Item> items = new ArrayList<>();

    // Sum the price of all items and subtract the discount when the total exceeds one hundred
    public double total(double discount) {
        double sum = 0;
        for (Item item : items) {
            sum += item.price() * item.quantity();
        }
        return sum > 100 ? sum - discount : sum;
    }

    // Remove the first item with the given name and report whether anything was removed
    public boolean remove(String name) {
        for (int i = 0; i < items.size(); i++) {
            if (items.get(i).name().equals(name)) {
                items.remove(i);
                return true;
            }
        }
        return false;
    }
}
